//! [`periodic_orbit`]: the checks of its inputs, the Newton shooting and
//! the Floquet multipliers of the orbit found.

use crate::error::OrbitError;
use crate::floquet::eigen_triples;
use crate::options::OrbitOptions;
use crate::orbit::{Multiplier, PeriodicOrbit};
use crate::reduction::Reduction;
use crate::shooting::Shooting;
use ia_adjoint::Workspace;
use ia_core::{name_index, HybridError, HybridSystem};
use nalgebra::{Complex, DMatrix, DVector};

/// Checks that the advancing states are a symmetry at the orbit: moving
/// them all by one unit moves the return by the same unit and nothing
/// else, `DP u = u` with `u` the sum of their unit vectors. Otherwise the
/// orbit found would not repeat: the next period starts from a shifted
/// state whose dynamics differ.
fn shifts_alike(
    system: &HybridSystem,
    advancing: &[usize],
    return_jacobian: &DMatrix<f64>,
) -> Result<(), HybridError> {
    let n = system.state_dim();
    let mut shift = DVector::zeros(n);
    for &c in advancing {
        shift[c] = 1.0;
    }
    let moved = return_jacobian * &shift;
    let scale = return_jacobian.amax().max(1.0);
    let worst = (&moved - &shift).iamax();
    if (moved[worst] - shift[worst]).abs() <= 1e-6 * scale {
        return Ok(());
    }
    let names = system.state_names();
    let listed: Vec<&str> = advancing.iter().map(|&c| names[c].as_str()).collect();
    Err(HybridError::invalid(
        "advancing",
        format!("[{}]", listed.join(", ")),
        format!(
            "must be states the system does not depend on except through their differences: moving them all by 1 at the start moves the return of '{}' by {} instead of {}; list the states of a position that advances each period (a runner's x and its foot's), all of them",
            names[worst],
            ia_core::short_num(moved[worst]),
            shift[worst],
        ),
    ))
}

/// Finds the periodic orbit through the section of transition `section`
/// (the state just after it fires) by Newton shooting from `guess`, with
/// parameters `params`; see the [crate documentation](crate) for the
/// mathematics and an example.
///
/// Errors: an unknown section (listing the transitions), invalid options, a
/// run that fails from the guess, no return within `max_period`
/// ([`OrbitError::NoReturn`]), or no convergence
/// ([`OrbitError::NoConvergence`], with the iterations, the residual and
/// what to try).
///
/// ```
/// use ia_orbits::{periodic_orbit, OrbitOptions};
///
/// let system = ia_models::by_name("rimless-wheel").unwrap().system();
/// let params = [9.81, 1.0, 0.3, 0.1]; // g, l, alpha, gamma
/// let guess = [0.1 - 0.3, 1.5];
/// let one = periodic_orbit(&system, "step", &guess, &params, &OrbitOptions::new(5.0)).unwrap();
/// // Two steps a period: the same orbit, twice the period, the multiplier squared.
/// let options = OrbitOptions::new(10.0).with_events_per_period(2);
/// let two = periodic_orbit(&system, "step", &guess, &params, &options).unwrap();
/// assert!((two.period - 2.0 * one.period).abs() < 1e-9);
/// assert!((two.multipliers[1].re - one.multipliers[1].re.powi(2)).abs() < 1e-9);
/// assert!(one.multipliers[0].trivial);
///
/// // Rolling uphill, the next spoke never strikes: a clear error.
/// let e = periodic_orbit(&system, "step", &[0.1 - 0.3, -1.0], &params, &OrbitOptions::new(5.0));
/// assert_eq!(e.unwrap_err().kind(), "no_return");
/// ```
pub fn periodic_orbit(
    system: &HybridSystem,
    section: &str,
    guess: &[f64],
    params: &[f64],
    options: &OrbitOptions,
) -> Result<PeriodicOrbit, OrbitError> {
    options.validate()?;
    let names = system.transition_names();
    let index = name_index("section transition", &names, section)?;
    for (what, expected, found) in [
        ("initial state", system.state_dim(), guess.len()),
        ("parameters", system.param_dim(), params.len()),
    ] {
        if expected != found {
            return Err(HybridError::DimensionMismatch {
                what: what.to_string(),
                expected,
                found,
            }
            .into());
        }
    }
    options.validate_advancing(system)?;
    let n = system.state_dim();
    let shooting = Shooting {
        system,
        section: index,
        section_name: &names[index],
        start_mode: system.transitions()[index].to,
        options,
        reduction: Reduction::new(n, &options.advancing),
        workspace: std::cell::RefCell::new(Workspace::new()),
    };
    let (x, ret, newton_iterations, residual) = shooting.newton(guess, params)?;
    let return_jacobian = ret.return_jacobian();
    if !options.advancing.is_empty() {
        shifts_alike(system, &options.advancing, &return_jacobian)?;
    }
    let triples = eigen_triples(&ret.monodromy);
    // The multipliers that are 1 whatever the parameters: the trivial one
    // along the flow, then the advancing states' shift, each the closest
    // to 1 of those left.
    let mut exactly_one: Vec<usize> = Vec::with_capacity(2);
    for _ in 0..1 + usize::from(!options.advancing.is_empty()) {
        let one = Complex::new(1.0, 0.0);
        let closest = (0..triples.len())
            .filter(|i| !exactly_one.contains(i))
            .min_by(|&a, &b| {
                (triples[a].value - one)
                    .norm()
                    .total_cmp(&(triples[b].value - one).norm())
            });
        exactly_one.extend(closest);
    }
    let multipliers = triples
        .iter()
        .enumerate()
        .map(|(i, t)| Multiplier {
            re: t.value.re,
            im: t.value.im,
            trivial: exactly_one.first() == Some(&i),
            advancing: exactly_one.get(1) == Some(&i),
        })
        .collect();
    let sensitivities = shooting.sensitivities(&x, params, &ret, &triples, &exactly_one);
    let advance = options
        .advancing
        .iter()
        .map(|&c| ret.state[c] - x[c])
        .collect();
    Ok(PeriodicOrbit {
        advancing: options
            .advancing
            .iter()
            .map(|&c| system.state_names()[c].clone())
            .collect(),
        advance,
        state_names: system.state_names().to_vec(),
        param_names: system.param_names().to_vec(),
        section: section.to_string(),
        events_per_period: options.events_per_period,
        fixed_point: x.iter().copied().collect(),
        period: ret.period,
        newton_iterations,
        residual,
        return_map_jacobian: return_jacobian,
        monodromy: ret.monodromy,
        multipliers,
        sensitivities_unavailable: sensitivities.as_ref().err().cloned(),
        sensitivities: sensitivities.ok(),
    })
}
