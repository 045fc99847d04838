"""The reference CPU speedrun: tiny_cpu's config through the standard speedrun steps.

openlab plan experiments/speedrun/tiny_cpu/tiny_cpu.py
openlab run  experiments/speedrun/tiny_cpu/tiny_cpu.py
"""

from pathlib import Path

from runner.config import load_config
from runner.speedrun import default_speedrun

STEPS = default_speedrun("tiny_cpu", load_config(Path(__file__).with_name("config.yaml")))

if __name__ == "__main__":
    from runner.executor_cli import main

    main()
