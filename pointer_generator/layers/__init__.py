"""Custom Keras layers of the pointer-generator network."""

from pointer_generator.layers.attention import CoverageAttention, masked_softmax
from pointer_generator.layers.final_distribution import FinalDistribution
from pointer_generator.layers.generation_probability import GenerationProbability
from pointer_generator.layers.reduce_state import ReduceState

__all__ = [
    "CoverageAttention",
    "FinalDistribution",
    "GenerationProbability",
    "ReduceState",
    "masked_softmax",
]
