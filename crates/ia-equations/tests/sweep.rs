//! A spiking network written as equations runs by the exact solver's
//! layered sweep (`ia_events::exact::sweeps`): its flow declares its
//! neurons as linear pairs, its guards their thresholds and its resets what
//! they write and read, each written entry from itself
//! (`Reset::writes_entrywise`), all inferred from the equations.
//!
//! References: the general exact run of the same model
//! (`exact::simulate_without_sweep`, one event after another from a queue),
//! which the sweep must reproduce to the bit (the sweep brings each block
//! over the same stretches with the same factors and kicks it by the same
//! arithmetic, so the same bits, as ia-events' own sweep tests check on the
//! ready model); and the ready `cuba-lif` model (its flow's blocks, guards
//! and resets written by hand in ia-models) with the same parameters.

use ia_adjoint::{jacobian, Method};
use ia_equations::EquationModel;
use ia_events::{exact, EventOptions, Problem, SolverChoice};
use ia_models::{CubaLif, Model};
use rstest::rstest;

/// The equations of `CubaLif::new(inputs, hidden, outputs)`, written as its
/// module documentation states them: its states and parameters (names and
/// defaults), `tau_mem V' = -V + I`, `tau_syn I' = -I` per neuron, and its
/// transitions in its order; an output spike sets `V_o<k>` to
/// `output_reset` followed by `k` (cuba-lif's `0` when empty).
fn cuba_lif_equations(
    (inputs, hidden, outputs): (usize, usize, usize),
    output_reset: &str,
) -> EquationModel {
    let spec = CubaLif::new(inputs, hidden, outputs).unwrap().spec();
    let object = |list: &[ia_models::Quantity]| {
        let fields: Vec<String> = list
            .iter()
            .map(|q| format!("\"{}\": {:e}", q.name, q.default))
            .collect();
        format!("{{{}}}", fields.join(", "))
    };
    let neurons: Vec<String> = (0..hidden)
        .map(|j| format!("h{j}"))
        .chain((0..outputs).map(|k| format!("o{k}")))
        .collect();
    let flow: Vec<String> = neurons
        .iter()
        .flat_map(|m| {
            [
                format!("\"V_{m}\": \"(-V_{m} + I_{m}) / tau_mem\""),
                format!("\"I_{m}\": \"-I_{m} / tau_syn\""),
            ]
        })
        .collect();
    let transition = |name: String, guard: String, reset: Vec<String>| {
        format!(
            "{{\"name\": \"{name}\", \"from\": \"subthreshold\", \"to\": \"subthreshold\", \
             \"guard\": \"{guard}\", \"direction\": \"rising\", \"reset\": {{{}}}}}",
            reset.join(", ")
        )
    };
    let kick = |target: &str, weight: String| format!("\"I_{target}\": \"I_{target} + {weight}\"");
    let mut transitions = Vec::new();
    for i in 0..inputs {
        let reset = (0..hidden)
            .map(|j| kick(&format!("h{j}"), format!("w_h{j}_in{i}")))
            .collect();
        transitions.push(transition(
            format!("input{i}"),
            format!("t - t_in{i}"),
            reset,
        ));
    }
    for j in 0..hidden {
        let mut reset = vec![format!("\"V_h{j}\": \"0\"")];
        reset.extend((0..outputs).map(|k| kick(&format!("o{k}"), format!("w_o{k}_h{j}"))));
        transitions.push(transition(
            format!("spike_h{j}"),
            format!("V_h{j} - theta"),
            reset,
        ));
    }
    for k in 0..outputs {
        let value = if output_reset.is_empty() {
            "0".to_string()
        } else {
            format!("{output_reset}{k}")
        };
        let reset = vec![format!("\"V_o{k}\": \"{value}\"")];
        transitions.push(transition(
            format!("spike_o{k}"),
            format!("V_o{k} - theta"),
            reset,
        ));
    }
    let text = format!(
        "{{\"states\": {}, \"params\": {}, \"modes\": {{\"subthreshold\": {{\"flow\": {{{}}}}}}}, \
         \"transitions\": [{}], \"initial_mode\": \"subthreshold\", \"t_end\": {:e}}}",
        object(&spec.states),
        object(&spec.params),
        flow.join(", "),
        transitions.join(", "),
        spec.t_end
    );
    EquationModel::from_json_str(&text).unwrap()
}

/// A lazy run (no event states), the form the sweep runs.
fn lazy() -> EventOptions {
    EventOptions {
        event_states: false,
        ..EventOptions::default()
    }
}

/// The equation network is swept, and the sweep gives the general run's
/// events and final state to the bit; the ready model's events and final
/// state agree to 1e-12 relative (the equation model's coefficients come
/// from dual numbers through `(-V + I) / tau_mem`, the ready model's from
/// `1 / tau_mem` written out, so they may differ in the last bit).
#[rstest]
#[case(2, 3, 2)]
#[case(5, 8, 3)]
fn an_equation_network_is_swept_to_the_bit(
    #[case] inputs: usize,
    #[case] hidden: usize,
    #[case] outputs: usize,
) {
    let equations = cuba_lif_equations((inputs, hidden, outputs), "");
    let ready = CubaLif::new(inputs, hidden, outputs).unwrap();
    let spec = ready.spec();
    assert_eq!(equations.spec().state_names(), spec.state_names());
    assert_eq!(equations.spec().param_names(), spec.param_names());
    let (system, ready_system) = (equations.system(), ready.system());
    let problem = |system| {
        Problem::new(
            system,
            spec.default_state(),
            spec.default_params(),
            spec.t_end,
        )
        .with_event_options(lazy())
    };
    let (swept_problem, ready_problem) = (problem(&system), problem(&ready_system));
    assert!(exact::sweeps(&swept_problem));
    assert!(exact::sweeps(&ready_problem));

    let swept = exact::simulate(&swept_problem).unwrap();
    let queued = exact::simulate_without_sweep(&swept_problem).unwrap();
    assert!(
        swept.events.len() > inputs + hidden,
        "hidden and output neurons fire: {} events",
        swept.events.len()
    );
    assert_eq!(swept.events, queued.events);
    assert_eq!(swept.final_state, queued.final_state);

    let reference = exact::simulate(&ready_problem).unwrap();
    assert_eq!(swept.events.len(), reference.events.len());
    for (e, r) in swept.events.iter().zip(&reference.events) {
        assert_eq!(e.transition, r.transition);
        let tolerance = 1e-12 * r.time.abs();
        assert!(
            (e.time - r.time).abs() <= tolerance,
            "{} vs {}",
            e.time,
            r.time
        );
    }
    let scale = reference
        .final_state
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    for (e, r) in swept.final_state.iter().zip(&reference.final_state) {
        assert!((e - r).abs() <= 1e-12 * scale, "{e} vs {r}");
    }
}

/// A reset whose written entry reads another entry is not entrywise, and
/// the network is then not swept (the same network with each output spike
/// setting `V_o = I_o` instead of 0); the general exact run still runs it.
#[test]
fn a_reset_that_reads_another_entry_is_not_swept() {
    let equations = cuba_lif_equations((2, 3, 2), "I_o");
    let spec = equations.spec();
    let system = equations.system();
    let problem = Problem::new(
        &system,
        spec.default_state(),
        spec.default_params(),
        spec.t_end,
    )
    .with_event_options(lazy());
    assert!(!system
        .transitions()
        .last()
        .unwrap()
        .reset
        .writes_entrywise());
    assert!(!exact::sweeps(&problem));
    assert!(!exact::simulate(&problem).unwrap().events.is_empty());
}

/// Derivatives through the exact solver of the equation network (its
/// partials by dual numbers through the expressions, its blocks and
/// thresholds inferred) against the ready `cuba-lif` model's (partials
/// written by hand, checked against finite differences in ia-models), both
/// modes, to 1e-10 relative: the same events, so the same terms summed, up
/// to rounding in the partials.
#[rstest]
#[case(Method::Forward)]
#[case(Method::Adjoint)]
fn derivatives_through_the_exact_solver_match_the_ready_model(#[case] method: Method) {
    let equations = cuba_lif_equations((2, 3, 2), "");
    let ready = CubaLif::new(2, 3, 2).unwrap();
    let spec = ready.spec();
    let (system, ready_system) = (equations.system(), ready.system());
    let run = |system| {
        let problem = Problem::new(
            system,
            spec.default_state(),
            spec.default_params(),
            spec.t_end,
        )
        .with_solver(SolverChoice::Exact);
        jacobian(&problem, method).unwrap_or_else(|e| panic!("{e}"))
    };
    let (got, reference) = (run(&system), run(&ready_system));
    assert!(got.trajectory.events.len() > 5);
    for (a, b) in [
        (&got.final_jacobian, &reference.final_jacobian),
        (&got.event_time_gradients, &reference.event_time_gradients),
    ] {
        assert_eq!(a.shape(), b.shape());
        for (k, (x, y)) in a.iter().zip(b.iter()).enumerate() {
            assert!(
                (x - y).abs() <= 1e-10 * (1.0 + y.abs()),
                "[{k}]: {x} vs {y}"
            );
        }
    }
}
