from progsum import Compactor, ConversationState, Policy, SummaryUpdate, render_anthropic
from progsum.testing import FunctionSummarizer

rules = FunctionSummarizer(  # stands in for a model: keeps what the user said must never happen
    lambda request: SummaryUpdate(
        add={"constraints": [m["content"] for _, m in request.segment if "Never" in m["content"]]}
    )
)
compactor = Compactor(policy=Policy(context_window=2_000), summarizer=rules)
state = ConversationState([{"role": "user", "content": "Plan 5 days in Lisbon for two."}])
state = state.append({"role": "assistant", "content": "Gladly. Any rules I should follow?"})
state = state.append({"role": "user", "content": "Never book flights before 9am. Budget: $3,000."})
for n in range(60):  # a long chat: append each turn, then let progsum decide
    state = state.append({"role": "assistant", "content": f"Idea {n}: a day trip by train. " * 6})
    state = compactor.maybe_compact(state.append({"role": "user", "content": "Another one?"}))

system, messages = render_anthropic(state, system="You are a travel agent.")
print(system[1]["text"])
print(f"{len(state.log)} messages logged, {len(messages)} sent, {len(state.events)} compactions")
