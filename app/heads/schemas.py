"""Request and response bodies of the head-atlas endpoints (/api/heads...)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from labs.roles.knockout import EVIDENCE_DRAWS
from labs.roles.probes import PROBE_KEYS
from labs.roles.registry import ROLE_KEYS

from ..schemas import AttentionPayload, Compared, Head, PromptRequest, Strict, TokenProb

RoleKey = Literal[ROLE_KEYS]  # from the role registry: a new role is a new accepted key
ProbeKey = Literal[PROBE_KEYS]


class ScoredHead(Strict):
    layer: int
    head: int
    score: float


class RoleEvidence(Strict):
    behaviour: str = Field(description="What the role's heads are for: copy, prose or names.")
    measure: str = Field(description="That behaviour in words.")
    unit: str
    heads: list[Head] = Field(description="The candidates, knocked out together (zero ablation).")
    intact: float = Field(description="The measure with every head (higher = worse).")
    ablated: float = Field(description="The measure without the candidates.")
    effect: float = Field(description="ablated - intact: how much worse the behaviour gets.")
    random_effect: float | None = Field(
        description=f"The same for as many random other heads: the median of 10 to {EVIDENCE_DRAWS} seeded sets "
        "(a typical set), drawn until the verdict is settled; null if too few."
    )
    min_effect: float = Field(description="The effect must be at least this ...")
    random_ratio: float = Field(description="... and at least this many times random_effect.")
    earned: bool = Field(description="Both hold: the candidates get the role.")


class RoleInfo(Strict):
    key: RoleKey
    name: str = Field(description="How the page names the role, e.g. 'previous-token'.")
    label: str = Field(description="The short badge on a head, e.g. 'prev'.")
    threshold: float = Field(description="A head is a candidate when its net score is at least this.")
    probe: ProbeKey = Field(description="The probe the role is drawn on (see /api/heads/probe).")
    explanation: str = Field(description="One plain-English line for a class.")
    how: str = Field(description="How the probe score is computed.")
    control_how: str = Field(description="What the control is.")
    about: Literal["position", "content"] = Field(
        description="position: net = min(score, control), the pattern must hold on random tokens too; "
        "content: net = score - control, what position alone cannot explain."
    )
    scores: list[list[float]] = Field(description="[layer][head] probe score.")
    controls: list[list[float]] = Field(description="[layer][head] control score.")
    nets: list[list[float]] = Field(description="[layer][head] net score, compared with the threshold.")
    candidates: list[ScoredHead] = Field(description="Heads whose net score clears the threshold.")
    evidence: RoleEvidence | None = Field(description="The candidates' knock-out; null: no candidate.")
    status: str = Field(description="Which heads earn the role in this model, or that none does, and why.")
    heads: list[ScoredHead] = Field(
        description="Heads labelled with the role (candidates whose knock-out evidence holds), best first; "
        "score = net score."
    )
    best: ScoredHead = Field(
        description="The head nearest to the role: its best candidate, else the highest net score among "
        "heads without the sharper role it yields to (local yields to previous-token)."
    )


class ScoreInfo(Strict):
    key: str = Field(description="A key of HeadResponse.scores (POST /api/head).")
    name: str
    explanation: str


class ProbeInfo(Strict):
    key: ProbeKey
    title: str
    n: int


class HeadsResponse(Strict):
    model: str
    n_layer: int
    n_head: int
    n_kv_head: int
    roles: list[RoleInfo]
    labels: list[list[list[RoleKey]]] = Field(
        description="[layer][head] -> the roles whose threshold it clears."
    )
    probes: list[ProbeInfo]
    repeat_length: int = Field(description="Tokens in each copy of the repeated random probe.")
    local_window: int = Field(description="Tokens before the current one that a local head's window covers.")
    head_scores: list[ScoreInfo] = Field(description="What each summary score of POST /api/head means.")
    sink_fact: str = Field(description="How many heads of this model rest on token 0, in a sentence.")
    head_notes: list[list[str]] = Field(
        description="[layer][head] -> its roles, or that it has none and why."
    )


class ProbeResponse(Strict):
    model: str
    probe: ProbeKey
    title: str
    n: int
    tokens: list[str]
    token_ids: list[int]
    attention: AttentionPayload


class HeadsQuery(Strict):
    """The cache key of the GET endpoints."""

    model: str | None = None
    probe: ProbeKey | None = None


class PromptRolesRequest(PromptRequest):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"prompt": "The cat sat on the mat. The cat"}]}
    )


class PromptRolesResponse(Strict):
    model: str
    n: int
    tokens: list[str]
    scores: dict[str, list[list[float]] | None] = Field(
        description="role -> [layer][head] score on this prompt; null when the prompt gives no evidence "
        "(no repeated token for induction/duplicate, too short for local). Pronoun needs its probes. "
        "Scores on a prompt have no control and no knock-out: they label nothing."
    )


class HeadAblationRequest(PromptRequest):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"prompt": "Lily had a red ball. She", "heads": [[1, 3]]},
                {
                    "prompt": "The cat sat on the mat. The cat",
                    "role": "induction",
                    "mode": "mean",
                    "top_k": 5,
                },
            ]
        },
    )
    heads: list[Head] | None = Field(
        default=None, max_length=4096, description="Heads to knock out, as [layer, head]."
    )
    role: RoleKey | None = Field(default=None, description="Or knock out every head labelled with this role.")
    mode: Literal["zero", "mean"] = Field(
        default="zero",
        description="zero: the head writes nothing; mean: it writes its mean output over positions.",
    )
    top_k: int = Field(default=5, ge=1, description="Next-token candidates to compare.")
    seed: int = Field(
        default=0, ge=0, le=2**31 - 1, description="Seed for drawing the random comparison heads."
    )

    @model_validator(mode="after")
    def _one_target(self) -> HeadAblationRequest:
        if (self.heads is None) == (self.role is None):
            raise ValueError("give either heads (a list of [layer, head]) or role, not both and not neither")
        if self.heads is not None and not self.heads:
            raise ValueError("heads is empty: name at least one [layer, head] to knock out")
        return self


class PromptEffect(Strict):
    tokens: list[str]
    index: int = Field(description="The position whose next token is compared: the prompt's last.")
    intact: list[TokenProb] = Field(description="Top-k with every head working.")
    ablated: list[TokenProb] = Field(description="Top-k with the heads knocked out.")
    rows: list[Compared] = Field(description="Union of both top-k lists with both probabilities.")
    kl: float = Field(description="KL(intact || ablated) in nats.")
    sentence: str


class RandomSet(Strict):
    heads: list[Head]
    second_copy_loss: float


class RepeatEffect(Strict):
    length: int = Field(description="Tokens in each copy of the repeated random sequence.")
    first_copy_loss: float = Field(description="Loss on the first copy: the model can only guess (nats).")
    second_copy_loss: float = Field(description="Loss on the second copy with every head working.")
    second_copy_loss_ablated: float = Field(description="Loss on the second copy with the heads knocked out.")
    random: list[RandomSet] = Field(description="The same number of other heads, drawn at random (seeded).")
    second_copy_loss_random: float | None = Field(
        description="Median second-copy loss over the random sets (the typical set, as the atlas's judge "
        "reads them); null if the model has too few other heads."
    )
    sentence: str


class HeadAblationResponse(Strict):
    model: str
    heads: list[Head]
    role: RoleKey | None
    mode: Literal["zero", "mean"]
    prompt: PromptEffect
    repeat: RepeatEffect
