"""An ensemble of scenarios across machines with Dask: each task runs one
scenario through impact_adjoint and returns plain numbers, so a cluster
computes exactly what a loop on one machine computes.

Here the cluster is a ``LocalCluster`` of two worker processes; pointing the
``Client`` at a scheduler's address spreads the same tasks over machines
(each needs the impact_adjoint wheel installed). The ensemble: ball2d-flat
runs over a grid of restitutions and launch heights, each returning x(T),
its number of impacts and the gradient of x(T) (one adjoint pass).

Run: ``python python/examples/dask_ensemble.py`` (needs the ``dask`` extra:
``pip install "impact_adjoint[dask]"``).
"""

import itertools


def scenarios():
    """The ensemble: (e, y0) over a 4 x 3 grid."""
    return [
        {"model": "ball2d-flat", "t_end": 2.0, "params": {"e": e}, "initial_state": {"y": y0}}
        for e, y0 in itertools.product([0.75, 0.8, 0.85, 0.9], [0.8, 1.0, 1.2])
    ]


def run_scenario(scenario):
    """One task: the run and its gradient, as plain Python numbers (what a
    worker sends back)."""
    import impact_adjoint as ia

    model = ia.Model.ready(scenario["model"])
    grad = model.gradient(
        scenario["initial_state"],
        scenario["params"],
        scenario["t_end"],
        loss=[{"of": "final.x", "weight": 1.0}],
    )
    return {
        "x_final": grad.value,
        "impacts": len(grad.event_times),
        "gradient": dict(zip(grad.wrt, grad.gradient.tolist())),
    }


def on_cluster(items, workers=2):
    """``run_scenario`` over ``items`` on a local cluster of ``workers``
    processes, results in the order of ``items``."""
    from dask.distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            return client.gather(client.map(run_scenario, items, pure=False))


def main():
    items = scenarios()
    distributed = on_cluster(items)
    sequential = [run_scenario(s) for s in items]
    for s, r in zip(items, distributed):
        print(f"e = {s['params']['e']}, y0 = {s['initial_state']['y']}: x(T) = {r['x_final']:.6f}, "
              f"{r['impacts']} impacts, dx(T)/de = {r['gradient']['param.e']:+.6f}")
    same = distributed == sequential
    print(f"{len(items)} scenarios on 2 worker processes; equal to the sequential loop: {same}")
    return distributed, sequential


if __name__ == "__main__":
    main()
