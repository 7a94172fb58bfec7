//! The stiff test problems of `crates/ia-verify/references/stiff/` (issue
//! 28): equation models with references computed outside the library (see
//! the folder's README). This module writes the one whose size is a
//! parameter, the heated rod, for any number of cells.

use serde_json::{json, Map, Value};

/// The heated rod's equation model with `cells` cells (at least 2): a rod
/// of unit length cut into `cells` cells with insulated ends, temperatures
/// `T0..T{N-1}`, diffusivity `kappa` (rate `D = kappa N^2` between
/// neighbours), loss `beta` to an ambient at 0, and a heater of total power
/// `P` in cell 0 (rate `P N` there), switched off when the far cell rises
/// through `hi` and on when it falls through `lo`.
///
/// The same document as `references/stiff/references.py` writes into
/// `heated_rod.json` (at 6 cells, with its 50-digit reference); each flow
/// reads only its neighbours, so its Jacobian is tridiagonal and a step of
/// an implicit method with a sparse factorisation costs O(N).
///
/// ```
/// let model = ia_verify::references::stiff::heated_rod(4);
/// assert_eq!(model["modes"]["cooling"]["flow"]["T3"], "D * (T2 - T3) - beta * T3");
/// ```
pub fn heated_rod(cells: usize) -> Value {
    let cells = cells.max(2);
    let last = cells - 1;
    let states: Map<String, Value> = (0..cells).map(|i| (format!("T{i}"), json!(0.0))).collect();
    let flow = |heating: bool| {
        let rates: Map<String, Value> = (0..cells)
            .map(|i| {
                let mut exchange = Vec::new();
                if i > 0 {
                    exchange.push(format!("D * (T{} - T{i})", i - 1));
                }
                if i < last {
                    exchange.push(format!("D * (T{} - T{i})", i + 1));
                }
                let mut rate = format!("{} - beta * T{i}", exchange.join(" + "));
                if heating && i == 0 {
                    rate.push_str(" + heat");
                }
                (format!("T{i}"), Value::from(rate))
            })
            .collect();
        json!({ "flow": rates })
    };
    json!({
        "name": "heated-rod",
        "description": format!("A rod of unit length in {cells} cells (insulated ends, diffusivity kappa, loss beta to the ambient) with a heater of total power P in cell 0, switched on below lo and off above hi by a thermostat at cell {last}."),
        "states": states,
        "params": {"kappa": 3.0, "beta": 1.0, "P": 3.5, "lo": 2.0, "hi": 3.0},
        "let": {"D": format!("kappa * {}", cells * cells), "heat": format!("P * {cells}")},
        "modes": {"heating": flow(true), "cooling": flow(false)},
        "transitions": [
            {"name": "heater_off", "from": "heating", "to": "cooling",
             "guard": format!("T{last} - hi"), "direction": "rising", "reset": {}},
            {"name": "heater_on", "from": "cooling", "to": "heating",
             "guard": format!("T{last} - lo"), "direction": "falling", "reset": {}}
        ],
        "initial_mode": "heating",
        "t_end": 5.5
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_the_committed_six_cell_rod() {
        // Reference: heated_rod.json as references.py wrote it (the model
        // its mpmath reference was computed for).
        let path = format!(
            "{}/references/stiff/heated_rod.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let committed: Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(heated_rod(6), committed);
    }
}
