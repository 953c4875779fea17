from pydantic_ai import Agent

from progsum import Compactor, Policy
from progsum.integrations.pydantic_ai import ProgsumCapability

progsum = ProgsumCapability(Compactor(policy=Policy(model="claude-sonnet-5-5")))
agent = Agent("anthropic:claude-sonnet-5-5", instructions="Plan trips.", capabilities=[progsum])
first = agent.run_sync("Plan 5 days in Lisbon. Never book flights before 9am.")
later = agent.run_sync("Add a day trip.", message_history=first.all_messages())  # resumes
