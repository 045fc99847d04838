"""The example speedrun `openlab init` wrote: a byte-level 4-layer Llama on the builtin corpus, CPU-sized.

Copy this folder to experiments/speedrun/<your_name>/<your_name>.py (+ config.yaml), change the config, and open
a PR that says `Preregistration: #N`. On your laptop:

    openlab flops experiments/speedrun/example/config.yaml
    openlab plan  experiments/speedrun/example/example.py
    openlab run   experiments/speedrun/example/example.py
"""

from pathlib import Path

from runner.config import load_config
from runner.speedrun import default_speedrun

STEPS = default_speedrun("example", load_config(Path(__file__).with_name("config.yaml")))

if __name__ == "__main__":
    from runner.executor_cli import main

    main()
