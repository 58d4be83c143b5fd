"""Probes of what a checkpoint knows: per-layer activations beside the emulator's RAM ground truth.

`labels` reads the ground truth, `activations` the layers, `collect` records both while games are played
(HDF5, written a game at a time), `fit` fits linear probes by whole games, `across` is the study over
runs' checkpoints; `pongrl probe` is pongrl.cli.probe.
"""
