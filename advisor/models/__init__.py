"""Pydantic shapes shared by every layer: device facts, workload answers, rules, proposals, runs,
audits."""
