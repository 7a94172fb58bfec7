"""Training a spiking network on the Yin-Yang task by exact event gradients
(EventProp: Wunderlich and Pehle, Scientific Reports 11:12829, 2021).

The network is the library's ready model ``cuba-lif`` (current-based leaky
integrate-and-fire neurons, ``size = [5, hidden, 3]``), run by the exact
event-driven solver; the class is the output neuron that fires first. The
loss reads the first spike time of each output neuron
(``impact_adjoint.jax.solver(..., first=("spike_o0", ...))``), and its
gradient with respect to every weight is one adjoint pass of the library
per sample (the adjoint through the spikes and resets: EventProp). A
batch of samples (per-sample input spike times, shared weights) is one
``jax.vmap``-ed call, its runs spread over the cores. A sample whose label
neuron does not fire adds nothing to the loss (see ``loss_and_correct``).

Data (Kriener, Goltz and Petrovici 2021, "The Yin-Yang dataset",
arXiv:2102.08211): points (x, y) drawn uniformly in the unit disc's square
by NumPy's ``RandomState``, the class (yin, yang, dot) chosen first and
points drawn until one of that class comes (balanced classes); features
``(x, y, 1 - x, 1 - y)``. Training set 5,000 samples (seed 42), validation
1,000 (seed 41), test 1,000 (seed 40, ``--test-seed``).

Coding: feature v fires input i at ``30 ms * v``, plus a bias input spike
"at the start". The library needs input times inside the run,
``0 < t_in < t_end``, so the bias spike is at ``T_BIAS = 0.01 ms``
rather than 0, and a feature time is held at ``T_BIAS`` or later (a
feature of exactly 0 happens with probability zero).

Run: ``python python/examples/yinyang.py --epochs 100 --json`` (needs the
``examples`` extra: ``pip install "impact_adjoint[examples]"``, which
brings jax and optax). Flags: ``--hidden`` (200), ``--epochs`` (100),
``--seed`` (weights and shuffling, 0), ``--test-seed`` (40),
``--train-size`` (5000), ``--test-size`` (1000), ``--validation-size``
(1000), ``--learning-rate`` (5e-3, the paper's), ``--t-end`` (50 ms),
``--json`` (one JSON
object at the end on stdout: ``test_accuracy``, ``seconds_per_epoch``,
``history``, ``cpu_seconds_per_epoch``, the CPU time of all threads, and
``refused``, the batches and samples the library refused as Zeno, see
``train``; the progress goes to stderr).
"""

import argparse
import json
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import impact_adjoint as ia
import impact_adjoint.jax as iajax

# Neuron and loss constants of the paper's Yin-Yang experiment, as in the
# GeNN reproduction by the paper's co-workers (tnowotny/genn_eventprop,
# simulator_yinyang.py: TAU_MEM, TAU_SYN, V_THRESH, TAU_0, TAU_1, ALPHA),
# and the statement of the loss (tau_0 = 0.5 ms, tau_1 = 6.4 ms,
# alpha = 3e-3).
TAU_MEM = 20.0  # ms
TAU_SYN = 5.0  # ms
THETA = 1.0
TAU_0 = 0.5  # ms: the softmax's temperature over first spike times
TAU_1 = 6.4  # ms: the regulariser pushing the label's spike early
ALPHA = 3e-3

# Input coding: the paper's figure 3D (features x, 1 - x, y, 1 - y as spike
# latencies over t_max = 30 ms, one bias spike); the bias time is ours.
T_MAX = 30.0  # ms
T_BIAS = 0.01  # ms: "at the start", inside the run
# Long enough for the output spikes that follow the last input (t_max): the
# model's default run (``--t-end``). The paper's code runs its layers to
# 1 s, so a late spike there still counts and is pulled earlier; here a
# spike after T_END is no spike.
T_END = 50.0  # ms

# Weight initialisation (genn_eventprop: INPUT_HIDDEN_MEAN/STD,
# HIDDEN_OUTPUT_MEAN/STD): normal, input -> hidden N(1.5, 0.78),
# hidden -> output N(0.93, 0.1).
W_IN = (1.5, 0.78)
W_OUT = (0.93, 0.1)

# Adam (beta1 0.9, beta2 0.999, eps 1e-8) at 5e-3, the rate multiplied by
# 0.95 every epoch (genn_eventprop: ETA, ADAM_BETA1/2, ADAM_EPS,
# ETA_DECAY "applied every epoch"); batches of 32 (N_BATCH).
LEARNING_RATE = 5e-3
DECAY_PER_EPOCH = 0.95
BATCH = 32

N_IN = 5
N_OUT = 3
OUTPUTS = tuple(f"spike_o{k}" for k in range(N_OUT))


def yinyang(size, seed, r_small=0.1, r_big=0.5):
    """The Yin-Yang data set of Kriener et al. (their generator, written
    again here): features ``(size, 4)`` and classes ``(size,)`` (0 yin, 1
    yang, 2 dot)."""
    rng = np.random.RandomState(seed)

    def which(x, y):
        right = np.hypot(x - 1.5 * r_big, y - r_big)
        left = np.hypot(x - 0.5 * r_big, y - r_big)
        if right < r_small or left < r_small:
            return 2
        yin = (
            right <= r_small
            or r_small < left <= 0.5 * r_big
            or (y > r_big and right > 0.5 * r_big)
        )
        return int(yin)

    features, classes = [], []
    for _ in range(size):
        goal = rng.randint(3)
        while True:
            x, y = rng.rand(2) * 2.0 * r_big
            if np.hypot(x - r_big, y - r_big) > r_big:
                continue
            c = which(x, y)
            if c == goal:
                break
        features.append([x, y, 1.0 - x, 1.0 - y])
        classes.append(c)
    return np.array(features), np.array(classes)


def input_times(features):
    """Spike times ``(samples, 5)``: the bias spike, then ``30 ms x`` each
    feature."""
    bias = np.full((len(features), 1), T_BIAS)
    return np.hstack([bias, np.maximum(T_MAX * features, T_BIAS)])


class Network:
    """The ``cuba-lif`` network ``[5, hidden, 3]`` and its first output spike
    times as a JAX function of the weights and a batch of input times."""

    def __init__(self, hidden, t_end=T_END):
        self.hidden = hidden
        model = ia.Model.ready("cuba-lif", size=[N_IN, hidden, N_OUT])
        names = model.param_names
        # The parameter order of cuba-lif: tau_mem, tau_syn, theta, the
        # input times, then the weights hidden by hidden, then output by output.
        assert names[3 + N_IN] == "w_h0_in0" and names[3 + N_IN + N_IN * hidden] == "w_o0_h0"
        self.n = len(model.state_names)
        self.f = iajax.solver(model, t_end, solver="exact", first=OUTPUTS)

    def first_times(self, weights, times):
        """First spike times ``(batch, 3)`` of the output neurons (``inf``
        for a neuron that does not fire) for input times ``(batch, 5)``."""
        w_in, w_out = weights["w_in"], weights["w_out"]
        constants = jnp.array([TAU_MEM, TAU_SYN, THETA], dtype=w_in.dtype)
        shared = jnp.concatenate([w_in.ravel(), w_out.ravel()])
        x0 = jnp.zeros(self.n, dtype=w_in.dtype)

        def one(t_in):
            params = jnp.concatenate([constants, t_in.astype(w_in.dtype), shared])
            return self.f(x0, params).first_times

        return jax.vmap(one)(times)

    def init(self, seed):
        """The paper's initialisation (module constants ``W_IN``, ``W_OUT``)."""
        rng = np.random.RandomState(seed)
        return {
            "w_in": jnp.asarray(rng.normal(*W_IN, size=(self.hidden, N_IN))),
            "w_out": jnp.asarray(rng.normal(*W_OUT, size=(N_OUT, self.hidden))),
        }


def loss_and_correct(first, labels):
    """The EventProp loss of a batch: the cross-entropy of ``softmax(-t /
    tau_0)`` at the label plus ``alpha (exp(t_label / tau_1) - 1)``, summed
    over the samples whose label neuron fires and divided by the batch size;
    how many samples the first spike classifies right; and how many samples'
    label neuron does not fire.

    A neuron that does not fire (``inf``) has no spike time to move: it
    drops out of the softmax and never wins. A sample whose label neuron
    does not fire adds nothing to the loss or its gradient, as in the
    paper's own code (github.com/eventprop/eventprop, ``loss_layer.py``,
    ``TTFSCrossEntropyLoss.backward``: such a sample's errors are NaN and
    skipped). Counting its label as firing at ``T_END`` instead, as this
    example first did, still pushed the sample's other neurons later; seed
    0 then went silent sample by sample and collapsed after ten epochs
    (docs/performance.md, "Training a spiking network")."""
    fired = jnp.isfinite(first)
    label_fired = jnp.take_along_axis(fired, labels[:, None], axis=-1)[:, 0]
    # Silent neurons are given a finite time, and a sample where no neuron
    # fires finite logits, only to keep inf and NaN out of the arithmetic
    # (and so out of the gradient, which flows through both sides of a
    # `where`); the masks drop them from the softmax and the loss.
    t = jnp.where(fired, first, T_END)
    logits = jnp.where(fired, -t / TAU_0, -jnp.inf)
    logits = jnp.where(jnp.any(fired, axis=-1, keepdims=True), logits, 0.0)
    log_p = jax.nn.log_softmax(logits, axis=-1)
    t_label = jnp.take_along_axis(t, labels[:, None], axis=-1)[:, 0]
    picked = jnp.take_along_axis(log_p, labels[:, None], axis=-1)[:, 0]
    per_sample = -picked + ALPHA * (jnp.exp(t_label / TAU_1) - 1.0)
    loss = jnp.sum(jnp.where(label_fired, per_sample, 0.0)) / labels.shape[0]
    predicted = jnp.argmin(jnp.where(fired, first, jnp.inf), axis=-1)
    correct = jnp.sum((predicted == labels) & jnp.any(fired, axis=-1))
    return loss, (correct, jnp.sum(~label_fired))


def train(hidden=200, epochs=100, seed=0, test_seed=40, train_size=5000, test_size=1000,
          validation_size=1000, learning_rate=LEARNING_RATE, t_end=T_END, report=None):
    """Trains and tests; returns the JSON record (``test_accuracy``,
    ``seconds_per_epoch``, ``history``). ``learning_rate`` is Adam's
    initial rate (the paper's by default); ``t_end`` the run's end (ms)."""
    x_train, y_train = yinyang(train_size, 42)
    x_val, y_val = yinyang(validation_size, 41)
    x_test, y_test = yinyang(test_size, test_seed)
    t_train, t_val, t_test = (input_times(x) for x in (x_train, x_val, x_test))

    net = Network(hidden, t_end)
    weights = net.init(seed)
    steps_per_epoch = train_size // BATCH
    schedule = optax.exponential_decay(
        learning_rate, transition_steps=max(steps_per_epoch, 1), decay_rate=DECAY_PER_EPOCH,
        staircase=True,
    )
    optimiser = optax.adam(schedule, b1=0.9, b2=0.999, eps=1e-8)
    state = optimiser.init(weights)

    def batch_loss(w, times, labels):
        return loss_and_correct(net.first_times(w, times), labels)

    @jax.jit
    def step(w, state, times, labels):
        (loss, (correct, silent)), grads = jax.value_and_grad(batch_loss, has_aux=True)(
            w, times, labels
        )
        updates, state = optimiser.update(grads, state, w)
        return optax.apply_updates(w, updates), state, loss, correct, silent

    @jax.jit
    def evaluate(w, times, labels):
        return batch_loss(w, times, labels)[1][0]

    # Runs the library refuses as Zeno (see ``zeno``): recorded, never hidden.
    refused = []

    def zeno(error, where):
        """``error`` (raised by jitted code) if it is not the library's Zeno
        error; otherwise noted under ``where``. Distinct neurons firing
        close together are no longer refused (the library's Zeno rule reads
        the gaps between firings of one neuron); a run is still refused when
        it has more than the library's 10,000 events (weights grown large
        enough to make neurons fire hundreds of times) or one neuron's
        spikes accumulate, and is then recorded rather than hidden."""
        error = iajax.library_error(error)
        if not isinstance(error, ia.ZenoError):
            raise error
        refused.append({**where, "error": str(error)})

    def accuracy(w, times, labels, what):
        correct = 0
        for start in range(0, len(labels), 250):
            end = start + 250
            try:
                correct += int(evaluate(w, jnp.asarray(times[start:end]), jnp.asarray(labels[start:end])))
            except jax.errors.JaxRuntimeError:
                # One sample at a time; a refused one counts as wrong.
                for i in range(start, min(end, len(labels))):
                    try:
                        correct += int(evaluate(w, jnp.asarray(times[i:i + 1]), jnp.asarray(labels[i:i + 1])))
                    except jax.errors.JaxRuntimeError as error:
                        zeno(error, {"set": what, "sample": i})
        return correct / len(labels)

    shuffle = np.random.RandomState(seed)
    history = []
    train_seconds = cpu_seconds = 0.0
    for epoch in range(epochs):
        order = shuffle.permutation(train_size)
        started, cpu_started = time.perf_counter(), time.process_time()
        losses, correct, silent = [], 0, 0
        for b in range(steps_per_epoch):
            batch = order[b * BATCH:(b + 1) * BATCH]
            try:
                result = step(weights, state, jnp.asarray(t_train[batch]), jnp.asarray(y_train[batch]))
                losses.append(float(result[2]))
            except jax.errors.JaxRuntimeError as error:
                # The batch is skipped (the weights stay), and recorded.
                zeno(error, {"set": "train", "epoch": epoch + 1, "batch": b})
                continue
            weights, state, right = result[0], result[1], result[3]
            correct += int(right)
            silent += int(result[4])
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu_started
        train_seconds += seconds
        cpu_seconds += cpu
        record = {
            "epoch": epoch + 1,
            "loss": float(np.mean(losses)) if losses else None,
            "train_accuracy": correct / max(steps_per_epoch * BATCH, 1),
            # Training samples whose label neuron did not fire (with the
            # weights before each batch's step).
            "silent_label": silent,
            "validation_accuracy": accuracy(weights, t_val, y_val, "validation"),
            "seconds": seconds,
            "cpu_seconds": cpu,
        }
        history.append(record)
        if report:
            report(record)
    return {
        "hidden": hidden,
        "epochs": epochs,
        "seed": seed,
        "test_seed": test_seed,
        "train_size": train_size,
        "learning_rate": learning_rate,
        "t_end": t_end,
        "test_accuracy": accuracy(weights, t_test, y_test, "test"),
        "seconds_per_epoch": train_seconds / epochs if epochs else None,
        # CPU time of every thread (the library's workers too): what the
        # training costs whatever else the machine runs.
        "cpu_seconds_per_epoch": cpu_seconds / epochs if epochs else None,
        "history": history,
        # Batches (training) and samples (evaluation) the library refused
        # as Zeno: skipped, and counted wrong.
        "refused": refused,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=200, help="hidden neurons (200)")
    parser.add_argument("--epochs", type=int, default=100, help="epochs (100)")
    parser.add_argument("--seed", type=int, default=0, help="weights and shuffling (0)")
    parser.add_argument("--test-seed", type=int, default=40, help="seed of the test set (40)")
    parser.add_argument("--train-size", type=int, default=5000, help="training samples (5000)")
    parser.add_argument("--test-size", type=int, default=1000, help="test samples (1000)")
    parser.add_argument(
        "--validation-size", type=int, default=1000, help="validation samples (1000)"
    )
    parser.add_argument(
        "--t-end", type=float, default=T_END, help=f"the run's end in ms ({T_END})"
    )
    parser.add_argument(
        "--learning-rate", type=float, default=LEARNING_RATE,
        help=f"Adam's initial rate ({LEARNING_RATE}, the paper's)",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object at the end")
    args = parser.parse_args(argv)

    def report(record):
        # Progress; with --json on stderr, so that stdout is the one object.
        print(
            f"epoch {record['epoch']:3d}  loss {record['loss']:.4f}  "
            f"train {record['train_accuracy']:.3f}  validation "
            f"{record['validation_accuracy']:.3f}  silent {record['silent_label']}  "
            f"{record['seconds']:.1f} s "
            f"({record['cpu_seconds']:.1f} s CPU)",
            file=sys.stderr if args.json else sys.stdout,
            flush=True,
        )

    result = train(
        hidden=args.hidden,
        epochs=args.epochs,
        seed=args.seed,
        test_seed=args.test_seed,
        train_size=args.train_size,
        test_size=args.test_size,
        validation_size=args.validation_size,
        learning_rate=args.learning_rate,
        t_end=args.t_end,
        report=report,
    )
    if args.json:
        print(json.dumps(result))
    else:
        print(f"test accuracy {result['test_accuracy']:.4f}, "
              f"{result['seconds_per_epoch']:.1f} s per epoch")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
