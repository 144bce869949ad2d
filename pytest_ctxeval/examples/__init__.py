"""Example strategies that ship with the package, to run as they are or to copy.

``trim``: an existing trimming function (LangChain-style ``trim_messages``)
wrapped as a strategy.  Run it with
``--ctx-strategy=pytest_ctxeval.examples.trim:TrimMessagesStrategy``.
"""
