"""What the tests share: servers and fake services to run against, file builders, waits,
the oracle harness (reference.py) and where the committed data lives (paths.py).
Imported one way: ``from tests.support.<module> import ...``."""
