"""The simulated class speaks the page's protocol: one request in flight per page, newest text wins."""

from __future__ import annotations

import asyncio
import json
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.classroom import CHARS_PER_S, Student

ANSWER_S = 0.5  # the fake server's time per answer: a few keystrokes arrive while one is pending


def test_a_student_keeps_one_request_in_flight_and_sends_the_newest_text():
    sent, in_flight, most = [], 0, 0

    async def server(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        sent.append(json.loads(request.content)["prompt"])
        await asyncio.sleep(ANSWER_S)
        in_flight -= 1
        if len(sent) == 2:  # a full queue once: the page waits Retry-After and sends the newest text
            return httpx.Response(503, headers={"retry-after": "0"}, json={"detail": "busy"})
        return httpx.Response(200, json={})

    async def lesson() -> tuple[Student, dict]:
        out = {"latencies": [], "errors": [], "busy": 0, "replaced": 0, "requests": 0}
        async with httpx.AsyncClient(
            transport=httpx.MockTransport(server), base_url="http://class"
        ) as client:
            student = Student(client, "The cat sat on the mat.", out)
            await student.type(time.monotonic() + 2.0)
        return student, out

    # Its own thread: a browser test earlier in the session may have left Playwright's loop running on this one.
    with ThreadPoolExecutor(1) as pool:
        student, out = pool.submit(asyncio.run, lesson()).result()
    typed = student.text[: student.typed]
    assert most == 1  # never two requests from one page at once
    assert sent[0] == typed[:1]  # the first keystroke is sent at once
    assert all(
        a != b and b.startswith(a) for a, b in zip(sent, sent[1:], strict=False)
    )  # newer text each time
    assert sent[-1] == typed and student.shown == len(typed)  # the last answer covers every keystroke
    assert len(sent) <= student.typed / 2  # keystrokes typed while one was pending were folded together
    assert out["busy"] == 1 and out["errors"] == [] and out["requests"] == len(sent)
    assert len(out["latencies"]) == student.typed and min(out["latencies"]) > 0
    assert student.typed == round(2.0 * CHARS_PER_S)
