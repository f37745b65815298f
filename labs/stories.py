"""The generated stories: the classroom model's simplest training text, and its held-out documents.

`story_documents(seed, n)` is the stream `training/corpus.py` writes (seed 0, 60,000 stories); every
`HELD_OUT_EVERY`-th document of it went to validation, never to training, so `held_out_stories` is
text the bundled model never trained on that any fresh clone can regenerate offline (the labs measure
on it; the model card's "stories" validation loss is measured on the same documents).
"""

from __future__ import annotations

import random

HELD_OUT_EVERY = 50  # document i is held out when i % 50 == 49


NAMES = {
    "she": ["Lily", "Mia", "Anna", "Sara", "Emma", "Lucy", "Zoe", "Ruby", "Ella", "Nora", "Amy", "Kate",
            "Rosa", "Maya", "Ivy", "Jane", "Grace", "Alice", "Chloe", "Hannah", "Olive", "Daisy"],
    "he": ["Tom", "Ben", "Max", "Sam", "Leo", "Jack", "Tim", "Finn", "Noah", "Omar", "Paul", "Luke",
           "Jake", "Oscar", "Henry", "Adam", "Ravi", "Theo", "Hugo", "Ned", "Dan", "Felix"],
}  # fmt: skip
ANIMALS = ["cat", "dog", "bird", "fox", "rabbit", "frog", "duck", "mouse", "bear", "horse", "owl", "pig"]
COLOURS = ["red", "blue", "green", "yellow", "big", "small", "shiny", "old", "new", "soft", "little"]
OBJECTS = ["ball", "kite", "hat", "box", "book", "cake", "boat", "doll", "drum", "cup", "apple", "key",
           "toy car", "blanket", "map", "shell", "flower", "bike", "lamp", "coat"]  # fmt: skip
PLACES = ["the park", "the woods", "the beach", "the garden", "the farm", "the river", "the market",
          "the school", "the hill", "the lake", "the town", "the kitchen", "the forest", "the zoo"]  # fmt: skip
FEELINGS = ["happy", "sad", "scared", "excited", "tired", "angry", "proud", "surprised", "hungry"]
VERBS = ["played", "ran", "danced", "sang", "jumped", "laughed", "walked", "swam", "read"]
WEATHER = ["It was a sunny day.", "It was raining.", "The wind was cold.", "The sky was blue.",
           "It was a warm morning.", "Snow fell softly."]  # fmt: skip
OPENINGS = ["Once upon a time", "One day", "Long ago", "One morning", "Last summer", "One evening"]


def possessive(pronoun: str) -> str:
    return {"she": "her", "he": "his", "they": "their"}[pronoun]


def objective(pronoun: str) -> str:
    return {"she": "her", "he": "him", "they": "them"}[pronoun]


def story(rng: random.Random, names: dict[str, list[str]] = NAMES) -> str:
    """A short story whose characters and things are named again and again; `names` gives each pronoun's
    choices (at least two each: the two characters may share a pronoun)."""
    p1, p2 = rng.choice(["she", "he"]), rng.choice(["she", "he"])
    a = rng.choice(names[p1])
    b = rng.choice([n for n in names[p2] if n != a])
    thing = f"{rng.choice(COLOURS)} {rng.choice(OBJECTS)}"
    pet = rng.choice(ANIMALS)
    place, place2 = rng.sample(PLACES, 2)
    feel, feel2 = rng.sample(FEELINGS, 2)
    verb = rng.choice(VERBS)
    P1, P2 = p1.capitalize(), p2.capitalize()
    s = []
    opening = rng.choice(OPENINGS)
    if opening == "Once upon a time":
        s.append(f"Once upon a time there was a {rng.choice(['little', 'kind', 'brave', 'curious'])} "
                 f"{'girl' if p1 == 'she' else 'boy'} called {a}.")  # fmt: skip
    else:
        s.append(f"{opening}, {a} went to {place}.")
    pool = [
        f"{a} had a {thing}. {P1} loved the {thing} very much.",
        f"{a} had a {pet} named {rng.choice(['Spot', 'Fluffy', 'Pip', 'Bella', 'Buddy', 'Coco'])}.",
        rng.choice(WEATHER),
        f"{a} met {b} at {place}. {P2} was {feel}.",
        f"{a} and {b} {verb} together at {place}.",
        f'{b} asked, "Can I play with your {thing}?" {a} said, "Yes, you can!"',
        f"The {pet} ran to {place2}, and {a} ran after it.",
        f"{a} felt {feel}. {P1} did not know what to do.",
        f"{b} gave {a} a {rng.choice(COLOURS)} {rng.choice(OBJECTS)}. {a} said thank you to {b}.",
        f"{a} looked for the {thing} everywhere, but {p1} could not find it.",
        f"Then {b} found the {thing} under a tree. {a} was {feel2} again.",
        f"{a} told {possessive(p1)} mom about {b}. {P1} smiled.",
        f"The {pet} sat on the {rng.choice(['mat', 'bed', 'chair', 'rug', 'wall', 'grass'])}.",
        f"{b} and {a} shared the {rng.choice(['cake', 'apple', 'bread', 'cookies', 'soup'])}.",
        f'"Look!" said {b}. "The {pet} is in {place2}!"',
        f"{a} helped {b}, and {b} helped {a}.",
        f"{a} put the {thing} in {possessive(p1)} bag and went home.",
        f"{b} was {feel} because {p2} lost {possessive(p2)} {rng.choice(OBJECTS)}.",
        f"{a} hugged {b}. They were good friends.",
        f"{a} wanted to go to {place2}, so {p1} asked {b} to come with {objective(p1)}.",
    ]
    body = rng.sample(pool, rng.randint(4, 9))
    s += body
    s.append(rng.choice([
        f"At the end of the day, {a} and {b} went home {feel2}.",
        f"From that day on, {a} and {b} played together every day.",
        f"{a} learned that sharing is good. The end.",
        f"{a} went to bed and dreamed about the {thing}.",
        f"{b} said goodbye to {a}, and {a} waved to {b}.",
    ]))  # fmt: skip
    return " ".join(s)


def story_documents(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [story(rng) for _ in range(n)]


def held_out_stories(n: int, seed: int = 0) -> list[str]:
    """The first n held-out (validation) stories of the training stream."""
    docs = story_documents(seed, n * HELD_OUT_EVERY)
    return [d for i, d in enumerate(docs) if i % HELD_OUT_EVERY == HELD_OUT_EVERY - 1]
