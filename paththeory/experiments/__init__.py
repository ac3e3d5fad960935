"""Reproduction pipelines, one module per figure of the paper, shared by the chapters and the CLI."""
