"""The embedded maintenance-search sample data (the demo's input and the tests' shared fixture)."""
