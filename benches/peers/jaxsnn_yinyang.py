#!/usr/bin/env python3
"""Peer comparison for issue 29: the time of one training epoch on the Yin-Yang
task in jaxsnn (the event-based EventProp example of the PyPI package,
``jaxsnn.examples.event.yinyang_layered_event_prop``), at the hidden-layer
size given, next to this project's ``python/examples/yinyang.py``.

jaxsnn's example is run as its authors wrote it (its own data, encoding,
loss, tau_mem = 2 tau_syn, one spike per neuron, float32), only the hidden
size and the epoch count set from here (``--n-spikes-hidden`` follows the
hidden size as its default does: hidden + 25). Its ``main`` runs the data
generation, the compilation and every epoch (its own per-epoch timer
stops before JAX's asynchronous work ends, so it is not used); the time
of one epoch is the difference between a run of ``--epochs`` epochs and a
run of one, each in a fresh process (each compiles once), divided by
``--epochs - 1`` (both wall and CPU time of all threads).

Run it in a virtual environment of its own (jaxsnn pins its jax):

    python3 -m venv target/jaxsnn-venv
    target/jaxsnn-venv/bin/python -m pip install -r benches/peers/requirements-jaxsnn.txt
    target/jaxsnn-venv/bin/python benches/peers/jaxsnn_yinyang.py --hidden 200 --epochs 3

It prints one JSON object (and writes it to ``--out`` when given).
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata


def timed(hidden, epochs, seed, train_size):
    """jaxsnn's example for ``epochs`` epochs: (test accuracy, wall s, CPU s)."""
    from jaxsnn.examples.event import yinyang_layered_event_prop as example

    args = example.get_parser().parse_args([
        "--hidden-size", str(hidden),
        "--n-spikes-hidden", str(hidden + 25),
        "--epochs", str(epochs),
        "--seed", str(seed),
        "--trainset-size", str(train_size),
    ])
    wall, cpu = time.perf_counter(), time.process_time()
    accuracy = example.main(args)
    return float(accuracy), time.perf_counter() - wall, time.process_time() - cpu


def in_process(hidden, epochs, seed, train_size):
    """``timed`` in a fresh Python process."""
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import jaxsnn_yinyang as b; "
        "print(json.dumps(b.timed(*map(int, sys.argv[2:]))))"
    )
    here = os.path.dirname(os.path.abspath(__file__))
    out = subprocess.run(
        [sys.executable, "-c", code, here, str(hidden), str(epochs), str(seed), str(train_size)],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=3, help="at least 2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train-size", type=int, default=4992, help="jaxsnn's default")
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args(argv)
    if args.epochs < 2:
        parser.error("--epochs must be at least 2 (one epoch's time is a difference)")
    one = in_process(args.hidden, 1, args.seed, args.train_size)
    many = in_process(args.hidden, args.epochs, args.seed, args.train_size)
    result = {
        "peer": "jaxsnn",
        "version": metadata.version("jaxsnn"),
        "jax": metadata.version("jax"),
        "example": "jaxsnn.examples.event.yinyang_layered_event_prop",
        "hidden": args.hidden,
        "train_size": args.train_size,
        "epochs": args.epochs,
        "test_accuracy_after_1": one[0],
        f"test_accuracy_after_{args.epochs}": many[0],
        "seconds_per_epoch": (many[1] - one[1]) / (args.epochs - 1),
        "cpu_seconds_per_epoch": (many[2] - one[2]) / (args.epochs - 1),
        "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "python": sys.version.split()[0],
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as out:
            out.write(text + "\n")
    return result


if __name__ == "__main__":
    main()
