from agents import Agent, Runner

from progsum import Compactor, Policy
from progsum.integrations.openai_agents import ProgsumSession

compactor = Compactor(policy=Policy(model="gpt-5-mini"))
session = ProgsumSession.sqlite("user-42", "chats.db", compactor=compactor)  # items + state
agent = Agent(name="travel", instructions="You are a travel agent.", model="gpt-5-mini")
result = Runner.run_sync(agent, "Plan 5 days in Lisbon.", session=session)
