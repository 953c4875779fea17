"""The shared data sets, read by name from the data folder every benchmark takes (``DATA``).

    from shared_data import agent_logs, chats, present
    for log in agent_logs(data, "tau_bench"): ...   # (set, file, conversations) per file
    for chat in chats(data, "msc"): ...             # Chat(name, messages) per conversation

The folder is the one ``DATA/README.md`` describes (``/work/shared/data`` on the team's machines);
its files are read in place, never copied. A set is named by its folder:

* agent logs (`AGENT_SETS`): ``claude_code`` (Claude Code sessions, ``.jsonl``, subagent runs
  under ``<session>/subagents/``), ``tau_bench`` (τ-bench airline runs) and ``swe_agent``
  (SWE-agent ``.traj`` files), each file read with `progsum.replay._importers.read_conversations`,
  which handles the README's traps (Claude Code's one row per content block, reused tool-call ids);
* chats (`CHAT_SETS`): ``msc`` (Multi-Session Chat, sessions 1-3 of each conversation, the two
  speakers named), ``memorybank`` (a message per query and response, named and dated),
  ``dailydialog`` (its test split), ``sgd``, ``multiwoz`` and ``crosswoz`` (test dialogues).

A set asked for by name that is not there stops the script with one message (`MissingData`)
naming the path looked at and what to pass. `present` is for the scripts that run over whatever
sets a folder holds (the test fixtures hold a few): it skips the missing ones, and stops the same
way when the folder holds none of them.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from progsum.replay._importers import Imported, read_conversations

Message = dict[str, Any]

AGENT_SETS: Mapping[str, str] = {
    "claude_code": "**/*.jsonl",
    "tau_bench": "*.json",
    "swe_agent": "**/*.traj",
}
"""The agent-log sets and the files of each that hold conversations."""
CHAT_SETS: Mapping[str, str] = {
    "msc": "msc/session_3/test.txt",
    "memorybank": "memorybank/memory_bank_en.json",
    "dailydialog": "dailydialog/data.zip",
    "sgd": "sgd/test",
    "multiwoz": "multiwoz/test.json.zip",
    "crosswoz": "crosswoz/test.json.zip",
}
"""The chat sets and the path each is read from, under the data folder."""
SETS = (*AGENT_SETS, *CHAT_SETS)


class MissingData(SystemExit):
    """A data set the script needs is not under the data folder it was given."""

    def __init__(self, data: Path, names: Iterable[str], looked: Path) -> None:
        wanted = ", ".join(f"{n}/" for n in names)
        super().__init__(
            f"no {wanted} data at {looked}: pass the shared data folder that holds it "
            f"(DATA, e.g. /work/shared/data; its README.md describes each set), not {data}"
        )


def path(data: Path, name: str) -> Path:
    """Where set ``name`` is read from under ``data`` (its folder, or its file for a chat set).

    Raises:
        MissingData: it is not there.
        ValueError: ``name`` is no set of the data folder.
    """
    if name in AGENT_SETS:
        where = data / name
        found = where.is_dir()
    elif name in CHAT_SETS:
        where = data / CHAT_SETS[name]
        found = where.exists()
    else:
        raise ValueError(f"no data set {name!r}: use one of {', '.join(SETS)}")
    if not found:
        raise MissingData(data, [name], where)
    return where


def present(data: Path, names: Iterable[str], *, some: bool = True) -> list[str]:
    """The sets of ``names`` that ``data`` holds, in the order given.

    Raises:
        MissingData: it holds none of them, and ``some`` asks for one at least.
    """
    wanted = list(names)
    found = [n for n in wanted if _has(data, n)]
    if some and wanted and not found:
        raise MissingData(data, wanted, data)
    return found


def _has(data: Path, name: str) -> bool:
    try:
        path(data, name)
    except MissingData:
        return False
    return True


# -- agent logs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Log:
    """One agent-log file: its set, its path and the conversations read from it."""

    set: str
    file: Path
    conversations: list[Imported]


def agent_files(data: Path, name: str, *, sessions: bool = False) -> list[Path]:
    """The files of agent set ``name``, sorted.

    ``sessions``: Claude Code's main sessions only (the top folder's ``.jsonl``; not the
    subagent runs under ``<session>/subagents/``).
    """
    if name not in AGENT_SETS:
        raise ValueError(f"{name!r} is no agent-log set: use one of {', '.join(AGENT_SETS)}")
    folder = path(data, name)
    pattern = "*.jsonl" if sessions and name == "claude_code" else AGENT_SETS[name]
    return sorted(folder.glob(pattern))


def agent_logs(data: Path, name: str, *, sessions: bool = False) -> Iterator[Log]:
    """Each file of agent set ``name`` with its conversations (`agent_files`)."""
    for file in agent_files(data, name, sessions=sessions):
        yield Log(name, file, read_conversations(file))


def agent_conversations(
    data: Path, names: Iterable[str] = AGENT_SETS, *, some: bool = True
) -> Iterator[tuple[str, Imported]]:
    """``(set, conversation)`` for every conversation of the agent sets ``data`` holds."""
    for name in present(data, names, some=some):
        for log in agent_logs(data, name):
            yield from ((name, c) for c in log.conversations)


def raw_records(file: Path) -> Any:  # noqa: ANN401 - a decoded JSON file
    """The decoded JSON of an agent-log file that is one document (τ-bench, SWE-agent)."""
    return json.loads(file.read_text(encoding="utf-8"))


# -- chats ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chat:
    """One conversation of a chat set: its name and its messages."""

    name: str
    messages: tuple[Message, ...]


def chats(data: Path, name: str) -> list[Chat]:
    """The conversations of chat set ``name``, in file order."""
    where = path(data, name)
    if name == "msc":
        records = enumerate(msc_records(where))
        return [Chat(f"msc-{n:03d}", msc_messages(record)) for n, record in records]
    if name == "memorybank":
        return [Chat(f"memorybank-{u.key}", u.messages) for u in memorybank(data)]
    if name == "dailydialog":
        return list(_dailydialog(where))
    if name == "sgd":
        return list(_sgd(where))
    return list(_woz(where, name))


def msc_file(place: Path) -> Path:
    """The MSC session-3 test file: ``place`` is the data folder, its ``msc/``, or the file.

    Raises:
        MissingData: none of them holds it.
    """
    for candidate in (place, place / CHAT_SETS["msc"], place / "session_3" / "test.txt"):
        if candidate.is_file():
            return candidate
    raise MissingData(place, ["msc"], place / CHAT_SETS["msc"])


def msc_records(place: Path, limit: int | None = None) -> Iterator[dict[str, Any]]:
    """MSC's records in file order (at most ``limit``), as `msc_file` finds the file."""
    with msc_file(place).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines):
            if limit is not None and number >= limit:
                return
            yield json.loads(line)


def msc_messages(record: Mapping[str, Any], *, named: bool = True) -> tuple[Message, ...]:
    """Sessions 1, 2 and 3 as one message list: even utterances user, odd ones assistant.

    ``named``: each message carries its speaker (``name``: "Speaker 1" or "Speaker 2").
    """
    sessions = [dialog["dialog"] for dialog in record["previous_dialogs"]] + [record["dialog"]]
    return tuple(
        {
            "role": "user" if n % 2 == 0 else "assistant",
            "content": turn["text"],
            **({"name": "Speaker 1" if n % 2 == 0 else "Speaker 2"} if named else {}),
        }
        for session in sessions
        for n, turn in enumerate(session)
    )


@dataclass(frozen=True)
class BankUser:
    """One MemoryBank history.

    Its key in the bank as written (it may carry spaces), its messages (a message per query and
    per response, named, dated by the history's day key in ``timestamp``) and the probing
    questions asked of it.
    """

    key: str
    messages: tuple[Message, ...]
    questions: tuple[str, ...]

    @property
    def user(self) -> str:
        """The key without its spaces, as the probing questions and the labels name the user."""
        return self.key.strip()


def memorybank(data: Path) -> list[BankUser]:
    """MemoryBank's histories with their probing questions, in the bank's order."""
    folder = path(data, "memorybank").parent
    bank = json.loads((folder / "memory_bank_en.json").read_text(encoding="utf-8"))
    questions: dict[str, list[str]] = {}
    for line in (folder / "probing_questions_en.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            questions.update({user.strip(): asked for user, asked in json.loads(line).items()})
    found = []
    for key, record in bank.items():
        name = str(record.get("name") or key).strip()
        messages: list[Message] = []
        for day, turns in sorted(record["history"].items()):
            for turn in turns:
                stamp = {"timestamp": day}
                messages.append({"role": "user", "content": turn["query"], "name": name, **stamp})
                messages.append(
                    {"role": "assistant", "content": turn["response"], "name": "AI", **stamp}
                )
        found.append(BankUser(key, tuple(messages), tuple(questions.get(key.strip(), []))))
    return found


def _dailydialog(archive_path: Path) -> Iterator[Chat]:
    """DailyDialog's test split: two people, named A and B (ConvLab's user/system alternate)."""
    with zipfile.ZipFile(archive_path) as archive:
        dialogues = json.loads(archive.read("data/dialogues.json"))
    for dialogue in dialogues:
        if dialogue.get("data_split") != "test":
            continue
        messages = tuple(
            {
                "role": "user" if t["speaker"] == "user" else "assistant",
                "content": t["utterance"],
                "name": "A" if t["speaker"] == "user" else "B",
            }
            for t in dialogue["turns"]
        )
        yield Chat(str(dialogue["dialogue_id"]), messages)


def _sgd(folder: Path) -> Iterator[Chat]:
    """SGD's test dialogues: a user and a booking system."""
    for file in sorted(folder.glob("dialogues_*.json")):
        for dialogue in json.loads(file.read_text(encoding="utf-8")):
            messages = tuple(
                {
                    "role": "user" if t["speaker"] == "USER" else "assistant",
                    "content": t["utterance"],
                }
                for t in dialogue["turns"]
            )
            yield Chat(str(dialogue["dialogue_id"]), messages)


def _woz(archive_path: Path, name: str) -> Iterator[Chat]:
    """MultiWOZ or CrossWOZ test dialogues (ConvLab-2 zips): a user and a clerk."""
    with zipfile.ZipFile(archive_path) as archive:
        dialogues = json.loads(archive.read("test.json"))
    for key, dialogue in dialogues.items():
        if "log" in dialogue:  # MultiWOZ: the user at even turns
            turns = [(n % 2 == 0, t["text"]) for n, t in enumerate(dialogue["log"])]
        else:  # CrossWOZ
            turns = [(t["role"] == "usr", t["content"]) for t in dialogue["messages"]]
        messages = tuple(
            {"role": "user" if user else "assistant", "content": text} for user, text in turns
        )
        yield Chat(f"{name}-{key}", messages)
