"""Pointer-generator networks (See, Liu & Manning, 2017) in TensorFlow 2 / Keras 3."""

__version__ = "0.1.0"
