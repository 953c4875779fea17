from progsum import Compactor, ConversationState, Policy, render_anthropic
from progsum.summarizers import ExtractiveSummarizer  # offline; AnthropicSummarizer() uses Claude

compactor = Compactor(policy=Policy(context_window=2_000), summarizer=ExtractiveSummarizer())
state = ConversationState([{"role": "user", "content": "Plan 5 days in Lisbon for two."}])
state = state.append({"role": "assistant", "content": "Gladly. Any rules I should follow?"})
state = state.append({"role": "user", "content": "Never book flights before 9am. Budget: $3,000."})
for sight in ["Belém Tower", "Alfama", "Sintra", "Cascais", "LX Factory"] * 8:  # a long chat
    state = state.append({"role": "user", "content": f"Is {sight} worth a visit?"})
    reply = f"Yes: go to {sight} early, before the crowds. We'll add it to day 2. " * 4
    state = compactor.maybe_compact(state.append({"role": "assistant", "content": reply}))

system, messages = render_anthropic(state, system="You are a travel agent.")
print(system[1]["text"])
compactions = sum(event.outcome == "compacted" for event in state.events)
print(f"{len(state.log)} messages logged, {len(messages)} sent, {compactions} compactions")
