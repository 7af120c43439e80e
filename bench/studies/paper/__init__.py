"""The parts of `bench.studies.paper_experiments`, one concern a module."""
