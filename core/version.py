"""The trajectoriz release. Part of every cache key: a new release re-translates."""

VERSION = "0.3.0"
