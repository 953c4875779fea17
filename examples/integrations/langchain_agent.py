import sqlite3

from langchain.agents import create_agent
from langgraph.checkpoint.sqlite import SqliteSaver

from progsum import Compactor, Policy
from progsum.integrations.langchain import ProgsumMiddleware

progsum = ProgsumMiddleware(Compactor(policy=Policy(model="claude-sonnet-5-5")))
saver = SqliteSaver(sqlite3.connect("chats.db", check_same_thread=False))  # messages + state
agent = create_agent("anthropic:claude-sonnet-5-5", middleware=[progsum], checkpointer=saver)
for text in ["Plan 5 days in Lisbon. Never book flights before 9am.", "Add a day trip."]:
    message = {"role": "user", "content": text}
    agent.invoke({"messages": [message]}, {"configurable": {"thread_id": "user-42"}})  # resumes
