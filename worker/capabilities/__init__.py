"""The capabilities a worker serves, each answering with a Struct: research and the agent tools."""
