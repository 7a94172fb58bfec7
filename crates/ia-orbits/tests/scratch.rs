use ia_orbits::*;
#[test]
fn scratch() {
    let model = ia_models::by_name("rimless-wheel").unwrap();
    let system = model.system();
    let (g, l, alpha, gamma) = (9.81, 1.0, std::f64::consts::FRAC_PI_8, 0.08);
    let params = [g, l, alpha, gamma];
    let orbit = periodic_orbit(&system, "step", &[gamma - alpha, 1.2], &params, &OrbitOptions::new(5.0)).unwrap();
    let s = orbit.sensitivities.unwrap();
    println!("{:?} want alpha {}", s.multipliers[1], -2.0 * (4.0 * alpha).sin());
}
