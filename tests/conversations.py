"""Hand-written fixture conversations in the shapes real agents produce.

Written for this project (not copied from any data set): a trip planned over many turns, a coding
agent on the Anthropic API with thinking and parallel tool calls, and an airline support agent on
the OpenAI API whose model reuses a tool-call id; and the shapes the window guarantee broke on
(issue 47): rounds of many parallel calls in both formats, two people telling each other about
their outings, a user logging numbers, a user setting limits (bench/windows.py replays them too).
"""

from __future__ import annotations

import json
import random
from typing import Any

Message = dict[str, Any]

TRIP_RULE = "Never book flights that leave before 9am."
TRIP_BUDGET = "The total budget is $3,000 for two people."


_DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def spelled(number: int) -> str:
    """``number`` in words ("one-two" for 12): fakes name ranges without inventing values."""
    return "-".join(_DIGITS[int(d)] for d in str(number))


def trip_planning(days: int = 12) -> list[Message]:
    """A user and an assistant planning a Lisbon trip; rules stated early, chatter after."""
    messages: list[Message] = [
        {"role": "user", "content": "Plan a 5-day trip to Lisbon for my partner and me in May."},
        {"role": "assistant", "content": "Happily. Any constraints I should know about?"},
        {"role": "user", "content": f"{TRIP_RULE} {TRIP_BUDGET} We are vegetarian."},
        {
            "role": "assistant",
            "content": "Noted: no flights before 9am, $3,000 in total, vegetarian food.",
        },
    ]
    sights = ["Belém Tower", "Alfama", "Sintra", "LX Factory", "Cascais", "Gulbenkian Museum"]
    for day in range(days):
        sight = sights[day % len(sights)]
        messages.append({"role": "user", "content": f"What about {sight}? Worth half a day?"})
        messages.append(
            {
                "role": "assistant",
                "content": (
                    f"{sight} is worth it. Go early to avoid queues; budget about €{15 + day} each "
                    "for tickets and snacks, and the tram or a 20-minute walk gets you there. "
                    "I would pair it with a nearby vegetarian lunch and a slow afternoon."
                ),
            }
        )
    return messages


def _tool_use(call_id: str, name: str, **arguments: Any) -> Message:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _tool_result(call_id: str, content: str) -> Message:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


def coding_session(rounds: int = 10) -> list[Message]:
    """A coding agent (Anthropic format): interleaved thinking, parallel calls, a reused call id."""
    messages: list[Message] = [
        {
            "role": "user",
            "content": (
                "Fix the failing test in tests/test_billing.py. Do not touch the production "
                "database config in config/prod.yaml."
            ),
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Run the tests first.", "signature": "sig-0"},
                _tool_use("toolu_01", "bash", command="pytest tests/test_billing.py -q"),
            ],
        },
        {
            "role": "user",
            "content": [
                _tool_result("toolu_01", "1 failed, 41 passed\nAssertionError: 1999 != 2000")
            ],
        },
    ]
    for r in range(rounds):
        # parallel reads, then a write; the model reuses the id "toolu_dup" every round
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": f"Round {r}: read both files.",
                        "signature": f"s{r}",
                    },
                    {"type": "text", "text": "Reading the invoice code and its test."},
                    _tool_use(f"toolu_r{r}a", "read", path="billing/invoice.py"),
                    _tool_use("toolu_dup", "read", path="tests/test_billing.py"),
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    _tool_result(
                        f"toolu_r{r}a", "def total(cents):\n    return round(cents / 100)\n" * 20
                    ),
                    _tool_result(
                        "toolu_dup", "def test_total():\n    assert total(199900) == 2000\n" * 10
                    ),
                ],
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": f"Round {r}: patch rounding.",
                        "signature": f"p{r}",
                    },
                    _tool_use(
                        f"toolu_w{r}", "edit", path="billing/invoice.py", old="round(", new="int("
                    ),
                ],
            }
        )
        messages.append({"role": "user", "content": [_tool_result(f"toolu_w{r}", "edited")]})
    messages.append({"role": "assistant", "content": "The test passes now: 42 passed."})
    messages.append({"role": "user", "content": "Thanks. Now run the whole suite."})
    return messages


def _call(call_id: str, name: str, **arguments: Any) -> Message:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def airline_support(rounds: int = 6) -> list[Message]:
    """An airline support agent (OpenAI format) with a system prompt and a reused call id."""
    messages: list[Message] = [
        {"role": "system", "content": "You are an airline agent. Follow the refund policy."},
        {
            "role": "user",
            "content": (
                "I'm mia_li_3668. Change reservation NO6JO3 to a flight after 11am EST; "
                "I only accept direct flights and will not pay more than $200 extra."
            ),
        },
    ]
    for r in range(rounds):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    _call("call_same", "get_reservation_details", reservation_id="NO6JO3")
                ],
            }
        )
        messages.append(
            {
                "role": "tool",
                "tool_call_id": "call_same",
                "content": json.dumps({"reservation_id": "NO6JO3", "flights": ["HAT136"], "r": r}),
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    _call(f"call_{r}a", "search_direct_flight", origin="JFK", destination="SEA"),
                    _call(f"call_{r}b", "search_onestop_flight", origin="JFK", destination="SEA"),
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{r}a", "content": "[HAT069 12:00]"})
        messages.append({"role": "tool", "tool_call_id": f"call_{r}b", "content": "[]"})
        messages.append({"role": "assistant", "content": f"Option {r}: HAT069 at 12:00, +$120."})
        messages.append({"role": "user", "content": "Keep looking, something cheaper."})
    return messages


def research_session() -> list[Message]:
    """A user and a research assistant weighing evidence on a clinical question."""
    return [
        {
            "role": "user",
            "content": (
                "Does intermittent fasting reduce HbA1c in adults with type 2 diabetes compared "
                "with continuous calorie restriction? Only randomised controlled trials published "
                "since 2015, and cite with DOIs."
            ),
        },
        {
            "role": "assistant",
            "content": (
                "I will search PubMed and the Cochrane Library with the terms 'intermittent "
                "fasting' AND 'HbA1c' AND 'randomized'. First hit: Carter et al. 2018, JAMA "
                "Network Open, doi:10.1001/jamanetworkopen.2018.0756, n=137, 12 months."
            ),
        },
        {
            "role": "user",
            "content": "Good. Leave out trials shorter than 12 weeks. What did Carter find?",
        },
        {
            "role": "assistant",
            "content": (
                "Carter 2018: HbA1c fell by 0.3% with 2-day fasting and 0.5% with continuous "
                "restriction; the difference was within the non-inferiority margin of 0.5%."
            ),
        },
        {
            "role": "user",
            "content": "Is the Liu 2022 alternate-day trial any good? I saw it on a blog.",
        },
        {
            "role": "assistant",
            "content": (
                "Liu et al. 2022, doi:10.1001/jamainternmed.2022.0000, ran only 8 weeks, so it "
                "fails your 12-week rule. Corley 2018 (doi:10.1111/dme.13595) is a better fit: "
                "n=41, 12 weeks, HbA1c unchanged in both arms."
            ),
        },
        {
            "role": "user",
            "content": "Right. Does fasting cause more hypoglycaemia on sulfonylureas?",
        },
        {
            "role": "assistant",
            "content": (
                "Corley 2018 reported hypoglycaemia in 8 of 41 participants on fasting days, "
                "mostly on sulfonylureas. I have not found a trial that powered for it."
            ),
        },
    ]


# -- the window guarantee's shapes (issue 47): parallel rounds, chats of stated values ----------

_SENTENCE = (
    "the build reads its partition table before it links and then writes every object file into "
    "a cache that the next run of the compiler checks for changes in headers sources and flags"
)
_WORDS = tuple(_SENTENCE.split(" "))


def result_text(seed: int, words: int = 330) -> str:
    """~330 words of build-log prose: ~1,800 characters, under `Reduction.min_chars`."""
    rng = random.Random(seed)  # noqa: S311 - reproducible text
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def openai_rounds(calls: int, rounds: int, words: int = 330) -> list[Message]:
    """A task, then ``rounds`` assistant turns of ``calls`` parallel calls, a tool message each.

    Each result is ``words`` words (`result_text`).
    """
    messages: list[Message] = [{"role": "user", "content": "Survey every module and report."}]
    for r in range(rounds):
        ids = [f"call_{r}_{k}" for k in range(calls)]
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call,
                        "type": "function",
                        "function": {"name": "read_file", "arguments": f'{{"path": "m{k}.py"}}'},
                    }
                    for k, call in enumerate(ids)
                ],
            }
        )
        messages += [
            {"role": "tool", "tool_call_id": call, "content": result_text(r * calls + k, words)}
            for k, call in enumerate(ids)
        ]
    return messages


def anthropic_rounds(calls: int, rounds: int, words: int = 330) -> list[Message]:
    """The same task and rounds in Anthropic shape: each round's results in one user message."""
    messages: list[Message] = [{"role": "user", "content": "Survey every module and report."}]
    for r in range(rounds):
        ids = [f"toolu_{r}_{k}" for k in range(calls)]
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "read_file",
                        "input": {"path": f"m{k}.py"},
                    }
                    for k, call in enumerate(ids)
                ],
            }
        )
        results = [
            {
                "type": "tool_result",
                "tool_use_id": call,
                "content": result_text(r * calls + k, words),
            }
            for k, call in enumerate(ids)
        ]
        messages.append({"role": "user", "content": results})
    return messages


PLACES = ("Lisbon", "Porto", "Madrid", "Leeds", "Dublin", "Oslo", "Turin", "Lyon")
THINGS = ("bike", "flat", "concert tickets", "guitar", "camera", "sofa", "laptop", "plane ticket")
NAMES = ("Anastasia Papadopoulou", "Bartholomew Fitzgerald")


def outings(turns: int, seed: int) -> list[Message]:
    """Two named people telling each other where they went, with whom and when, a day a page."""
    rng = random.Random(seed)  # noqa: S311 - reproducible text
    return [
        {
            "role": ("user", "assistant")[n % 2],
            "content": f"We went to {rng.choice(PLACES)} with Maria and Tom on "
            f"{rng.randint(1, 28)} May and saw the {rng.choice(THINGS)}.",
            "name": NAMES[n % 2],
            "timestamp": f"2023-05-{1 + n // 10:02d}",
        }
        for n in range(turns)
    ]


def training_log(days: int, seed: int) -> tuple[list[Message], set[str]]:
    """A user logging runs and sleep with an assistant: a number or two in most messages.

    Also returns every value the user stated, as written.
    """
    rng = random.Random(seed)  # noqa: S311 - reproducible text
    messages: list[Message] = []
    stated: set[str] = set()
    for _ in range(days):
        if rng.random() < 0.85:
            km, pulse = f"{rng.randint(2, 30)} km", str(rng.randint(45, 80))
            messages.append(
                {"role": "user", "content": f"Today I ran {km} and my resting pulse was {pulse}."}
            )
            stated |= {km, pulse}
        else:
            messages.append({"role": "user", "content": "Not much to report today, a rest day."})
        messages.append(
            {"role": "assistant", "content": "Noted; keep the easy days easy and stretch after."}
        )
    return messages, stated


SUBJECTS = ("lunch", "taxis", "hotels", "books", "coffee", "gifts", "flights", "software")


def spending_rules(days: int, seed: int) -> list[Message]:
    """A user setting a spending limit in most messages: a rule with a value each."""
    rng = random.Random(seed)  # noqa: S311 - reproducible text
    messages: list[Message] = []
    for _ in range(days):
        limit, subject = rng.randint(5, 900), rng.choice(SUBJECTS)
        said = f"Never spend more than {limit} euros on {subject} this month."
        messages.append({"role": "user", "content": said})
        messages.append({"role": "assistant", "content": "Understood, I will keep to that limit."})
    return messages
