from langchain.agents import create_agent
from langgraph.checkpoint.memory import InMemorySaver

from progsum import Compactor, Policy
from progsum.integrations.langchain import ProgsumMiddleware

progsum = ProgsumMiddleware(Compactor(policy=Policy(model="claude-sonnet-4-5")))
model, saver = "anthropic:claude-sonnet-4-5", InMemorySaver()  # progsum's state is checkpointed
agent = create_agent(model, tools=[], middleware=[progsum], checkpointer=saver)
