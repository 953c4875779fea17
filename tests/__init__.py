"""The test suite of progsum."""
