//! Checking a form, compiling it, and the pieces of the hybrid system.

use crate::compile::{Compiler, Program};
use crate::error::EquationError;
use crate::expr::{self, visit_names, BinaryOp, Expr, Function, Name, Printed, Scope};
use crate::form::{EquationsForm, Ordered};
use crate::sparse::SparseJacobian;
use ia_core::{
    Autodiff, Direction, Flow, FlowFn, FlowPartials, FromMode, GuardFn, HybridError, HybridSystem,
    LinearBlocks, LinearPair, ResetFn, Scalar, Sparsity, Support, Tangent, Threshold, ToMode,
};
use ia_models::{Model, ModelSpec, Quantity, TransitionSpec};
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

/// The names an expression of the model may read.
struct Names<'a> {
    states: &'a [String],
    params: &'a [String],
    lets: &'a [String],
}

impl Scope for Names<'_> {
    fn resolve(&self, name: &str) -> Option<Name> {
        let find = |list: &[String]| list.iter().position(|n| n == name);
        if name == "t" {
            return Some(Name::Time);
        }
        find(self.states)
            .map(Name::State)
            .or_else(|| find(self.params).map(Name::Param))
            .or_else(|| find(self.lets).map(Name::Let))
    }

    fn names(&self) -> Vec<String> {
        let mut all: Vec<String> = self.states.iter().chain(self.params).cloned().collect();
        all.push("t".to_string());
        all.extend(self.lets.iter().cloned());
        all
    }
}

/// One transition, parsed.
#[derive(Clone, Debug, PartialEq)]
struct ParsedTransition {
    name: String,
    from: usize,
    to: usize,
    direction: Direction,
    guard: Expr,
    /// `(state index, new value)` for the states that change.
    reset: Vec<(usize, Expr)>,
}

/// A hybrid model written as equations, checked and compiled.
///
/// It is a [`Model`] like the ready ones: [`Model::spec`] describes it and
/// [`Model::system`] builds a [`HybridSystem`] whose partial derivatives come
/// from dual numbers through the compiled expressions.
///
/// ```
/// use ia_equations::EquationModel;
/// use ia_models::Model;
///
/// let ball = EquationModel::from_json_str(r#"{
///     "states": {"y": 1.0, "vy": 0.0},
///     "params": {"g": 9.81, "e": 0.8},
///     "modes": {"flight": {"flow": {"y": "vy", "vy": "-g"}}},
///     "transitions": [{"name": "bounce", "from": "flight", "to": "flight",
///                      "guard": "y", "direction": "falling",
///                      "reset": {"vy": "-e * vy"}}],
///     "initial_mode": "flight"}"#).unwrap();
/// let system = ball.system();
/// assert_eq!(system.state_names(), ["y", "vy"]);
/// assert_eq!(ball.spec().default_params(), [9.81, 0.8]);
///
/// let err = EquationModel::from_json_str(r#"{"states": ["y", "vy"], "params": {"g": 9.81, "e": 0.8},
///     "modes": {"flight": {"flow": {"y": "vy", "vy": "-g"}}},
///     "transitions": [{"name": "bounce", "from": "flight", "to": "flight",
///                      "guard": "y", "direction": "falling", "reset": {"vy": "-e * ee"}}]}"#)
///     .unwrap_err();
/// assert_eq!(err.to_string(), "transition \"bounce\", reset.vy, column 6: unknown name \"ee\"; \
///     names are y, vy, g, e, t; closest is \"e\"");
/// ```
#[derive(Clone, Debug)]
pub struct EquationModel {
    form: EquationsForm,
    states: Vec<String>,
    params: Vec<String>,
    let_names: Vec<String>,
    lets: Vec<Expr>,
    modes: Vec<String>,
    flows: Vec<Vec<Expr>>,
    transitions: Vec<ParsedTransition>,
    initial_mode: usize,
    compiled_flows: Vec<Arc<Program>>,
    compiled_guards: Vec<Arc<Program>>,
    compiled_resets: Vec<Arc<Program>>,
}

/// Names that no state, parameter or `let` may take.
fn reserved(name: &str) -> Option<&'static str> {
    if name == "t" {
        Some("it is the time")
    } else if Function::by_name(name).is_some() {
        Some("it is a function")
    } else {
        None
    }
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

fn quoted_list(names: &[String]) -> String {
    names.join(", ")
}

impl EquationModel {
    /// Reads and checks a model from its JSON text.
    pub fn from_json_str(text: &str) -> Result<Self, EquationError> {
        Self::from_form(crate::shape::form_of_text(text)?)
    }

    /// Reads and checks a model from a JSON value (as found inside a
    /// scenario), in the order of its objects' keys (the document's, with
    /// serde_json's `preserve_order`, which the workspace turns on); a state
    /// given twice in a flow cannot be seen there (JSON keeps the last).
    pub fn from_value(value: &serde_json::Value) -> Result<Self, EquationError> {
        Self::from_form(crate::shape::form_of_value(value)?)
    }

    /// Checks and compiles a form.
    pub fn from_form(form: EquationsForm) -> Result<Self, EquationError> {
        let states: Vec<String> = form.states.0.iter().map(|(n, _)| n.clone()).collect();
        let params: Vec<String> = form.params.0.iter().map(|(n, _)| n.clone()).collect();
        let let_names: Vec<String> = form.lets.0.iter().map(|(n, _)| n.clone()).collect();
        if states.is_empty() {
            return Err(EquationError::structure(
                "states",
                "a model needs at least one state",
            ));
        }
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for (key, kind, list) in [
            ("states", "state", &states),
            ("params", "parameter", &params),
            ("let", "let", &let_names),
        ] {
            for name in list.iter() {
                let place = format!("{key}.{name}");
                if !is_identifier(name) {
                    return Err(EquationError::structure(
                        place,
                        format!("\"{name}\" is not a name (letters, digits and _, not starting with a digit)"),
                    ));
                }
                if let Some(why) = reserved(name) {
                    return Err(EquationError::structure(
                        place,
                        format!("\"{name}\" cannot name a {kind}: {why}"),
                    ));
                }
                if let Some((_, other)) = seen.iter().find(|(n, _)| n == name) {
                    return Err(EquationError::structure(
                        place,
                        format!("\"{name}\" is already a {other} name"),
                    ));
                }
                seen.push((name, kind));
            }
        }
        for (name, value) in form.states.0.iter().chain(&form.params.0) {
            if !value.is_finite() {
                return Err(EquationError::structure(
                    name.clone(),
                    format!("default value {value} is not finite"),
                ));
            }
        }
        let modes: Vec<String> = form.modes.0.iter().map(|(n, _)| n.clone()).collect();
        if modes.is_empty() {
            return Err(EquationError::structure(
                "modes",
                "a model needs at least one mode",
            ));
        }
        if let Some(name) = modes
            .iter()
            .enumerate()
            .find_map(|(i, m)| modes[..i].contains(m).then_some(m))
        {
            return Err(EquationError::structure(
                format!("mode \"{name}\""),
                "the mode is declared twice",
            ));
        }
        let names = Names {
            states: &states,
            params: &params,
            lets: &let_names,
        };
        let parse = |place: String, text: &str| {
            expr::parse(text, &names).map_err(|e| EquationError::Expression {
                place,
                column: e.column,
                message: e.message,
            })
        };

        let lets = form
            .lets
            .0
            .iter()
            .map(|(name, text)| parse(format!("let \"{name}\""), text))
            .collect::<Result<Vec<_>, _>>()?;
        check_let_cycles(&let_names, &lets)?;

        let mut flows = Vec::new();
        for (mode, body) in &form.modes.0 {
            let place = format!("mode \"{mode}\", flow");
            let rows = assignments(&place, &body.flow, &states, &parse)?;
            if let Some(missing) = (0..states.len()).find(|i| !rows.iter().any(|(j, _)| j == i)) {
                return Err(EquationError::structure(
                    place,
                    format!(
                        "no expression for state \"{}\"; a flow gives the rate of every state: {}",
                        states[missing],
                        quoted_list(&states)
                    ),
                ));
            }
            let mut ordered: Vec<(usize, Expr)> = rows;
            ordered.sort_by_key(|(i, _)| *i);
            flows.push(ordered.into_iter().map(|(_, e)| e).collect::<Vec<_>>());
        }

        let mut transitions: Vec<ParsedTransition> = Vec::new();
        for t in &form.transitions {
            let place = format!("transition \"{}\"", t.name);
            if t.name.is_empty() {
                return Err(EquationError::structure(
                    "transitions",
                    "a transition needs a non-empty name",
                ));
            }
            if transitions.iter().any(|u| u.name == t.name) {
                return Err(EquationError::structure(
                    place,
                    "two transitions have this name; names must be unique",
                ));
            }
            let mode = |key: &str, name: &str| {
                modes.iter().position(|m| m == name).ok_or_else(|| {
                    EquationError::structure(
                        format!("{place}, {key}"),
                        expr::unknown("mode", name, &modes),
                    )
                })
            };
            let from = mode("from", &t.from)?;
            let to = mode("to", &t.to)?;
            let guard = parse(format!("{place}, guard"), &t.guard)?;
            let reset = assignments(&format!("{place}, reset"), &t.reset, &states, &parse)?;
            transitions.push(ParsedTransition {
                name: t.name.clone(),
                from,
                to,
                direction: t.direction,
                guard,
                reset,
            });
        }

        let initial_mode = match &form.initial_mode {
            None => 0,
            Some(name) => modes.iter().position(|m| m == name).ok_or_else(|| {
                EquationError::structure("initial_mode", expr::unknown("mode", name, &modes))
            })?,
        };
        if let Some(t_end) = form.t_end {
            if !(t_end.is_finite() && t_end > 0.0) {
                return Err(EquationError::structure(
                    "t_end",
                    format!("{t_end} is not a positive run length"),
                ));
            }
        }

        let (n, np) = (states.len(), params.len());
        let compile = |outputs: &mut dyn Iterator<Item = &Expr>| {
            let mut c = Compiler::new(n, np, &lets);
            outputs.for_each(|e| c.output(e));
            Arc::new(c.finish())
        };
        let compiled_flows = flows.iter().map(|f| compile(&mut f.iter())).collect();
        let compiled_guards = transitions
            .iter()
            .map(|t| compile(&mut std::iter::once(&t.guard)))
            .collect();
        let compiled_resets = transitions
            .iter()
            .map(|t| compile(&mut t.reset.iter().map(|(_, e)| e)))
            .collect();
        Ok(Self {
            form,
            states,
            params,
            let_names,
            lets,
            modes,
            flows,
            transitions,
            initial_mode,
            compiled_flows,
            compiled_guards,
            compiled_resets,
        })
    }

    /// The form the model was read from.
    pub fn form(&self) -> &EquationsForm {
        &self.form
    }

    /// The model's name (`name` in the form, default `equations`).
    pub fn model_name(&self) -> &str {
        self.form.name.as_deref().unwrap_or("equations")
    }

    fn name_of(&self, n: Name) -> &str {
        match n {
            Name::Time => "t",
            Name::State(i) => &self.states[i],
            Name::Param(i) => &self.params[i],
            Name::Let(i) => &self.let_names[i],
        }
    }

    /// `e` printed back with this model's names.
    fn print(&self, e: &Expr) -> String {
        let names = |n: Name| self.name_of(n);
        Printed {
            expr: e,
            names: &names,
        }
        .to_string()
    }

    /// How the model was understood: states, parameters, `let`
    /// intermediates, modes with their flows and transitions with guard,
    /// direction and reset, every expression printed back from its parsed
    /// form (with the fewest parentheses that keep its meaning).
    ///
    /// ```
    /// let m = ia_equations::EquationModel::from_json_str(r#"{"states": ["x"],
    ///     "params": {"k": 2}, "modes": {"decay": {"flow": {"x": "-(k*x)"}}}}"#).unwrap();
    /// assert!(m.describe().contains("x' = -(k * x)"));
    /// ```
    pub fn describe(&self) -> String {
        let mut out = String::new();
        let values = |list: &[(String, f64)]| {
            list.iter()
                .map(|(n, v)| format!("{n} = {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(out, "model {}", self.model_name());
        let _ = writeln!(out, "states: {}", values(&self.form.states.0));
        let _ = writeln!(out, "params: {}", values(&self.form.params.0));
        if !self.lets.is_empty() {
            let _ = writeln!(out, "let:");
            for (name, e) in self.let_names.iter().zip(&self.lets) {
                let _ = writeln!(out, "  {name} = {}", self.print(e));
            }
        }
        let _ = writeln!(out, "initial mode: {}", self.modes[self.initial_mode]);
        for (mode, flow) in self.modes.iter().zip(&self.flows) {
            let _ = writeln!(out, "mode {mode}:");
            for (state, e) in self.states.iter().zip(flow) {
                let _ = writeln!(out, "  {state}' = {}", self.print(e));
            }
        }
        for t in &self.transitions {
            let _ = writeln!(
                out,
                "transition {}: {} -> {}, when {} crosses 0 {}",
                t.name,
                self.modes[t.from],
                self.modes[t.to],
                self.print(&t.guard),
                format!("{:?}", t.direction).to_lowercase()
            );
            if t.reset.is_empty() {
                let _ = writeln!(out, "  no state changes");
            }
            for (i, e) in &t.reset {
                let _ = writeln!(out, "  {} <- {}", self.states[*i], self.print(e));
            }
        }
        out
    }

    /// When `error` is a non-finite value found during a run of this model
    /// with parameters `params`, the expressions of the mode the run was in
    /// (its `let`s, its flow, the guards of its transitions) evaluated at the
    /// last state recorded, and the first that is not finite named with its
    /// value; `None` for another error or when every expression is finite
    /// there.
    pub fn explain_non_finite(&self, error: &HybridError, params: &[f64]) -> Option<String> {
        let HybridError::NonFinite {
            trajectory: Some(run),
            ..
        } = error
        else {
            return None;
        };
        let mode = run.final_mode;
        self.modes.get(mode)?;
        let (t, x) = (run.final_time, run.final_state.as_slice());
        if x.len() != self.states.len() || params.len() != self.params.len() {
            return None;
        }
        let at = |e: &Expr| {
            let mut c = Compiler::new(self.states.len(), self.params.len(), &self.lets);
            c.output(e);
            c.finish().eval_one(t, x, params)
        };
        let mut candidates: Vec<(String, &Expr)> = Vec::new();
        for (name, e) in self.let_names.iter().zip(&self.lets) {
            candidates.push((format!("let \"{name}\""), e));
        }
        for (state, e) in self.states.iter().zip(&self.flows[mode]) {
            candidates.push((format!("mode \"{}\", flow.{state}", self.modes[mode]), e));
        }
        for tr in self.transitions.iter().filter(|tr| tr.from == mode) {
            candidates.push((format!("transition \"{}\", guard", tr.name), &tr.guard));
        }
        candidates.into_iter().find_map(|(place, e)| {
            let v = at(e);
            (!v.is_finite()).then(|| {
                format!(
                    "{place} = {} is {v} at t = {}",
                    self.print(e),
                    ia_core::short_num(t)
                )
            })
        })
    }
}

/// The `(state index, expression)` rows of a flow or reset object, each
/// state at most once.
fn assignments(
    place: &str,
    rows: &Ordered<String>,
    states: &[String],
    parse: &dyn Fn(String, &str) -> Result<Expr, EquationError>,
) -> Result<Vec<(usize, Expr)>, EquationError> {
    let mut out: Vec<(usize, Expr)> = Vec::new();
    for (state, text) in &rows.0 {
        let key = format!("{place}.{state}");
        let Some(i) = states.iter().position(|s| s == state) else {
            return Err(EquationError::structure(
                key,
                expr::unknown("state", state, states),
            ));
        };
        if out.iter().any(|(j, _)| *j == i) {
            return Err(EquationError::structure(
                key,
                format!("state \"{state}\" is given twice"),
            ));
        }
        out.push((i, parse(key, text)?));
    }
    Ok(out)
}

/// A `let` that reads itself, directly or through others, has no value.
fn check_let_cycles(names: &[String], lets: &[Expr]) -> Result<(), EquationError> {
    // 0 unvisited, 1 on the current path, 2 done.
    fn visit(
        i: usize,
        lets: &[Expr],
        state: &mut [u8],
        path: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        if state[i] == 2 {
            return None;
        }
        if state[i] == 1 {
            let start = path.iter().position(|&k| k == i).unwrap_or(0);
            let mut cycle = path[start..].to_vec();
            cycle.push(i);
            return Some(cycle);
        }
        state[i] = 1;
        path.push(i);
        let mut reads = Vec::new();
        visit_names(&lets[i], &mut |n| {
            if let Name::Let(j) = n {
                reads.push(j);
            }
        });
        for j in reads {
            if let Some(cycle) = visit(j, lets, state, path) {
                return Some(cycle);
            }
        }
        path.pop();
        state[i] = 2;
        None
    }
    let mut state = vec![0u8; lets.len()];
    for i in 0..lets.len() {
        if let Some(cycle) = visit(i, lets, &mut state, &mut Vec::new()) {
            let chain: Vec<&str> = cycle.iter().map(|&k| names[k].as_str()).collect();
            return Err(EquationError::structure(
                format!("let \"{}\"", names[cycle[0]]),
                format!("it depends on itself: {}", chain.join(" -> ")),
            ));
        }
    }
    Ok(())
}

/// The flow of one mode, compiled; partials by dual numbers.
#[derive(Clone, Debug)]
pub struct EquationFlow(Arc<Program>);

impl FlowFn for EquationFlow {
    #[inline]
    fn rate<S: Scalar>(&self, t: S, x: &[S], p: &[S], dxdt: &mut [S]) {
        self.0.eval(t, x, p, |k, v| dxdt[k] = v);
    }
}

/// [`Autodiff`] of an [`EquationFlow`], with the forward-sensitivity rate
/// taken column by column ([`Program::sensitivity_rate`]) and the adjoint's
/// products by a reverse sweep ([`Program::vector_jacobian_product`]),
/// instead of through the dense partials and a matrix product; it declares
/// its state Jacobian's sparsity, read off its instructions on first
/// request, with the entries by column compression ([`SparseJacobian`]).
///
/// When its rates are affine in the states with coefficients and offsets of
/// the parameters alone (the flag, [`EquationModel::flow_is_linear`]), it
/// declares its linear blocks ([`Flow::linear_blocks`]) when every entry is
/// coupled to at most one other, so that the exact solver runs it.
#[derive(Debug)]
struct SensitiveFlow(
    Autodiff<EquationFlow>,
    OnceLock<Option<SparseJacobian>>,
    bool,
);

impl SensitiveFlow {
    fn new(program: Arc<Program>, linear: bool) -> Self {
        Self(Autodiff(EquationFlow(program)), OnceLock::new(), linear)
    }

    fn sparse(&self) -> Option<&SparseJacobian> {
        let program = &self.0 .0 .0;
        self.1
            .get_or_init(|| SparseJacobian::of(program, program.outputs()))
            .as_ref()
    }
}

impl Flow for SensitiveFlow {
    #[inline]
    fn rate(&self, t: f64, x: &[f64], p: &[f64], dxdt: &mut [f64]) {
        self.0.rate(t, x, p, dxdt);
    }

    /// `f = A(p) x + b(p)`: `b` is the rate at `x = 0`, `A` the state
    /// Jacobian there (its entries by the dual numbers, on its structural
    /// pattern); an entry coupled to one other (either way) forms a pair
    /// with it, and an entry coupled to two or more refuses the blocks.
    fn linear_blocks(&self, p: &[f64], blocks: &mut LinearBlocks) -> bool {
        let Some(sparse) = self.sparse().filter(|_| self.2) else {
            return false;
        };
        let pattern = sparse.pattern();
        let n = pattern.dim();
        if blocks.a.len() != n || blocks.b.len() != n {
            return false;
        }
        let mut partner = vec![usize::MAX; n];
        for col in 0..n {
            for &row in pattern.column(col).iter().filter(|&&row| row != col) {
                for (i, j) in [(row, col), (col, row)] {
                    if partner[i] == usize::MAX {
                        partner[i] = j;
                    } else if partner[i] != j {
                        return false;
                    }
                }
            }
        }
        let zeros = vec![0.0; n];
        let mut values = vec![0.0; pattern.nnz()];
        sparse.values(&self.0 .0 .0, (0.0, &zeros, p), &mut values);
        let entry = |row: usize, col: usize| pattern.position(row, col).map_or(0.0, |k| values[k]);
        self.rate(0.0, &zeros, p, &mut blocks.b);
        blocks.pairs.clear();
        for (i, &j) in partner.iter().enumerate() {
            blocks.a[i] = entry(i, i);
            if j != usize::MAX && i < j {
                blocks.pairs.push(LinearPair::new(
                    [i, j],
                    [[entry(i, i), entry(i, j)], [entry(j, i), entry(j, j)]],
                    [blocks.b[i], blocks.b[j]],
                ));
            }
        }
        true
    }

    fn partials(&self, t: f64, x: &[f64], p: &[f64], out: &mut FlowPartials) {
        self.0.partials(t, x, p, out);
    }

    fn state_sparsity(&self) -> Option<&Sparsity> {
        self.sparse().map(SparseJacobian::pattern)
    }

    fn state_jacobian_is_constant(&self) -> bool {
        self.0 .0 .0.state_jacobian_is_constant()
    }

    fn sparse_state_partials(&self, t: f64, x: &[f64], p: &[f64], values: &mut [f64]) -> bool {
        let Some(sparse) = self.sparse() else {
            return false;
        };
        sparse.values(&self.0 .0 .0, (t, x, p), values);
        true
    }

    fn sensitivity_rate(&self, t: f64, x: &[f64], p: &[f64], s: &[f64], ds: &mut [f64]) -> bool {
        self.0 .0 .0.sensitivity_rate(t, x, p, s, ds);
        true
    }

    fn vector_jacobian_product(
        &self,
        t: f64,
        x: &[f64],
        p: &[f64],
        v: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) -> bool {
        self.0
             .0
             .0
            .vector_jacobian_product(t, x, p, v, x_bar, p_bar);
        true
    }

    fn jacobian_vector_product(
        &self,
        t: f64,
        x: &[f64],
        p: &[f64],
        tangent: Tangent<'_>,
        out: &mut [f64],
    ) -> bool {
        self.0.jacobian_vector_product(t, x, p, tangent, out)
    }
}

/// What a guard crosses, when it is written as a threshold: `x_k - level`
/// or `t - level` (or `x_k`, `t`) with a level of the parameters alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Crossing {
    /// Any other form.
    Other,
    /// A threshold on state entry `k`.
    State(usize),
    /// A threshold on time.
    Time,
}

/// How a threshold guard's level is read at a run's parameters: a
/// parameter or a number read directly (`V - theta`, `t - t_in0`,
/// `V - 1.5`, `V`), any other expression of the parameters by evaluating
/// the guard (which loads every state and parameter: for a large network
/// written as equations, once per transition per run, so the common forms
/// skip it).
#[derive(Clone, Copy, Debug, PartialEq)]
enum LevelOf {
    /// A number (zero for a guard `x_k` or `t` alone).
    Number(f64),
    /// Parameter `i`.
    Param(usize),
    /// Minus the guard at `t = 0`, `x = 0`.
    Guard,
}

/// The guard of one transition, compiled, with the entries it reads.
#[derive(Clone, Debug)]
pub struct EquationGuard {
    program: Arc<Program>,
    direction: Direction,
    states: Vec<usize>,
    params: Vec<usize>,
    crossing: Crossing,
    level_of: LevelOf,
    /// The number of state entries.
    dim: usize,
}

impl EquationGuard {
    /// The level of a guard `x_k - level(p)` or `t - level(p)`: the
    /// parameter or number it is, or else minus the guard at `t = 0` and
    /// `x = 0`, where it is `0 - level`, which is `-level` exactly.
    fn level(&self, p: &[f64]) -> f64 {
        match self.level_of {
            LevelOf::Number(v) => v,
            LevelOf::Param(i) => p[i],
            LevelOf::Guard => -self.program.eval_one(0.0, &vec![0.0; self.dim], p),
        }
    }
}

impl GuardFn for EquationGuard {
    fn direction(&self) -> Direction {
        self.direction
    }

    #[inline]
    fn value<S: Scalar>(&self, t: S, x: &[S], p: &[S]) -> S {
        self.program.eval_one(t, x, p)
    }

    fn support(&self) -> Option<Support<'_>> {
        Some(Support {
            states: &self.states,
            params: &self.params,
        })
    }

    fn threshold(&self, p: &[f64]) -> Option<Threshold> {
        match self.crossing {
            Crossing::State(state) => Some(Threshold {
                state,
                level: self.level(p),
            }),
            _ => None,
        }
    }

    fn time_threshold(&self, p: &[f64]) -> Option<f64> {
        (self.crossing == Crossing::Time).then(|| self.level(p))
    }
}

/// The reset of one transition, compiled: the states it lists get their
/// new values, the others carry over.
#[derive(Clone, Debug)]
pub struct EquationReset {
    program: Arc<Program>,
    targets: Vec<usize>,
    /// The states its new values read (through `let`s too), sorted.
    reads: Vec<usize>,
    /// Whether each new value reads no state but its own
    /// ([`EquationModel::reset_is_entrywise`]).
    entrywise: bool,
}

impl ResetFn for EquationReset {
    #[inline]
    fn apply<S: Scalar>(&self, t: S, x: &[S], p: &[S], x_after: &mut [S]) {
        x_after.copy_from_slice(x);
        let targets = &self.targets;
        self.program.eval(t, x, p, |k, v| x_after[targets[k]] = v);
    }

    fn writes(&self) -> Option<&[usize]> {
        Some(&self.targets)
    }

    fn reads(&self) -> Option<&[usize]> {
        Some(&self.reads)
    }

    fn writes_entrywise(&self) -> bool {
        self.entrywise
    }
}

impl EquationModel {
    /// Hands `visit` every name the expression `e` reads but its `let`s,
    /// through its `let`s (each `let` once).
    fn visit_through_lets(&self, e: &Expr, mut visit: impl FnMut(Name)) {
        let mut pending = vec![e];
        let mut lets_seen = vec![false; self.lets.len()];
        while let Some(e) = pending.pop() {
            visit_names(e, &mut |n| match n {
                Name::Let(i) => {
                    if !lets_seen[i] {
                        lets_seen[i] = true;
                        pending.push(&self.lets[i]);
                    }
                }
                n => visit(n),
            });
        }
    }

    /// The entries (states, parameters) the expression `e` reads, through its
    /// `let`s too, sorted.
    fn support_of(&self, e: &Expr) -> (Vec<usize>, Vec<usize>) {
        let (mut states, mut params) = (Vec::new(), Vec::new());
        self.visit_through_lets(e, |n| match n {
            Name::State(i) => states.push(i),
            Name::Param(i) => params.push(i),
            _ => {}
        });
        for list in [&mut states, &mut params] {
            list.sort_unstable();
            list.dedup();
        }
        (states, params)
    }

    /// Whether the expression `e` reads the time, through its `let`s too.
    fn reads_time(&self, e: &Expr) -> bool {
        let mut time = false;
        self.visit_through_lets(e, |n| time |= n == Name::Time);
        time
    }

    /// Whether mode `m`'s rates are affine in the states with coefficients
    /// and offsets of the parameters alone, `f = A(p) x + b(p)`: a state
    /// Jacobian constant in `(t, x)` ([`Program::state_jacobian_is_constant`])
    /// and no rate that reads the time.
    fn flow_is_linear(&self, m: usize) -> bool {
        self.compiled_flows[m].state_jacobian_is_constant()
            && !self.flows[m].iter().any(|e| self.reads_time(e))
    }

    /// What the guard `e` crosses: `x_k - level` (or `x_k`) is a threshold
    /// on `x_k` and `t - level` (or `t`) one on time, when the level reads
    /// neither the states nor the time; any other form is
    /// [`Crossing::Other`]. With it, how its level is read.
    fn crossing_of(&self, e: &Expr) -> (Crossing, LevelOf) {
        let (on, level) = match e {
            Expr::Binary(BinaryOp::Sub, on, level) => (&**on, Some(&**level)),
            on => (on, None),
        };
        let constant = |l: &Expr| self.support_of(l).0.is_empty() && !self.reads_time(l);
        if !level.is_none_or(constant) {
            return (Crossing::Other, LevelOf::Guard);
        }
        let crossing = match on {
            Expr::Name(Name::State(k)) => Crossing::State(*k),
            Expr::Name(Name::Time) => Crossing::Time,
            _ => Crossing::Other,
        };
        let level_of = match level {
            None => LevelOf::Number(0.0),
            Some(Expr::Number(v)) => LevelOf::Number(*v),
            Some(Expr::Name(Name::Param(i))) => LevelOf::Param(*i),
            Some(_) => LevelOf::Guard,
        };
        (crossing, level_of)
    }

    /// Whether each entry a reset writes takes a new value that reads no
    /// state entry but its own (time and parameters aside, through `let`s
    /// too), as [`ia_core::Reset::writes_entrywise`] asks: `I = I + w` and
    /// `V = 0` do, `V = I` does not. The new values are all formed from the
    /// state before the reset, so one entry's may then be formed apart from
    /// the others'.
    fn reset_is_entrywise(&self, reset: &[(usize, Expr)]) -> bool {
        reset
            .iter()
            .all(|(i, e)| self.support_of(e).0.iter().all(|j| j == i))
    }
}

impl Model for EquationModel {
    /// Always `"equations"`: the catalogue name of models given as data (the
    /// model's own name is [`EquationModel::model_name`] and
    /// [`ModelSpec::name`]).
    fn name(&self) -> &'static str {
        "equations"
    }

    fn spec(&self) -> ModelSpec {
        let quantities = |list: &[(String, f64)]| {
            list.iter()
                .map(|(name, default)| Quantity {
                    name: name.clone(),
                    default: *default,
                    unit: String::new(),
                })
                .collect()
        };
        ModelSpec {
            name: self.model_name().to_string(),
            description: self
                .form
                .description
                .clone()
                .unwrap_or_else(|| "A model written as equations.".to_string()),
            states: quantities(&self.form.states.0),
            params: quantities(&self.form.params.0),
            modes: self.modes.clone(),
            initial_mode: self.modes[self.initial_mode].clone(),
            t_end: self.form.t_end.unwrap_or(1.0),
            transitions: self
                .transitions
                .iter()
                .map(|t| TransitionSpec {
                    name: t.name.clone(),
                    from: self.modes[t.from].clone(),
                    to: self.modes[t.to].clone(),
                    direction: t.direction,
                })
                .collect(),
        }
    }

    fn system(&self) -> HybridSystem {
        let states: Vec<&str> = self.states.iter().map(String::as_str).collect();
        let params: Vec<&str> = self.params.iter().map(String::as_str).collect();
        let mut builder = HybridSystem::builder(&states, &params);
        for (m, (mode, program)) in self.modes.iter().zip(&self.compiled_flows).enumerate() {
            builder = builder.mode(
                mode,
                SensitiveFlow::new(program.clone(), self.flow_is_linear(m)),
            );
        }
        for (k, t) in self.transitions.iter().enumerate() {
            let (support_states, support_params) = self.support_of(&t.guard);
            let (crossing, level_of) = self.crossing_of(&t.guard);
            let guard = EquationGuard {
                program: self.compiled_guards[k].clone(),
                direction: t.direction,
                states: support_states,
                params: support_params,
                crossing,
                level_of,
                dim: self.states.len(),
            };
            let mut reads: Vec<usize> = t
                .reset
                .iter()
                .flat_map(|(_, e)| self.support_of(e).0)
                .collect();
            reads.sort_unstable();
            reads.dedup();
            let reset = EquationReset {
                program: self.compiled_resets[k].clone(),
                targets: t.reset.iter().map(|(i, _)| *i).collect(),
                reads,
                entrywise: self.reset_is_entrywise(&t.reset),
            };
            builder = builder.transition(
                &t.name,
                FromMode(&self.modes[t.from]),
                ToMode(&self.modes[t.to]),
                Autodiff(guard),
                Autodiff(reset),
            );
        }
        builder
            .build()
            .expect("a checked equation model builds: names were validated when it was read")
    }

    /// The expression behind a non-finite value
    /// ([`EquationModel::explain_non_finite`]), in the words a front adds
    /// to the error.
    fn hint(&self, params: &[f64], error: &HybridError) -> Option<String> {
        self.explain_non_finite(error, params)
            .map(|culprit| format!("in the model's equations, {culprit}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The column-by-column sensitivity rate equals `f_x S + [0 | f_p]`
    /// formed from the dense partials (dual numbers, one direction at a
    /// time), on a nonlinear flow with a `let`, time and every parameter.
    #[test]
    fn sensitivity_rate_equals_the_partials_product() {
        let model = EquationModel::from_json_str(
            r#"{"states": ["a", "w"], "params": {"g": 9.81, "c": 0.3},
                "let": {"drag": "c * w * abs(w)"},
                "modes": {"swing": {"flow": {"a": "w", "w": "-g * sin(a) - drag + 0.1 * cos(t)"}}}}"#,
        )
        .unwrap();
        let system = model.system();
        let flow = &system.modes()[0].flow;
        let (t, x, p) = (0.4, [0.7, -1.2], [9.81, 0.3]);
        let (n, m) = (2, 4);
        let s: Vec<f64> = (0..n * m).map(|k| 0.3 * k as f64 - 1.0).collect();
        let mut ds = vec![0.0; n * m];
        assert!(flow.sensitivity_rate(t, &x, &p, &s, &mut ds));
        let mut d = FlowPartials::zeros(n, 2);
        flow.partials(t, &x, &p, &mut d);
        // The partials themselves, by hand: f_w = -2 c |w| (w < 0: -2 c (-w)).
        assert!((d.x[(1, 0)] + 9.81 * 0.7f64.cos()).abs() < 1e-15);
        assert!((d.x[(1, 1)] + 2.0 * 0.3 * 1.2).abs() < 1e-15);
        assert!((d.p[(1, 1)] + (-1.2) * 1.2).abs() < 1e-15);
        for c in 0..m {
            for i in 0..n {
                let mut expected: f64 = (0..n).map(|k| d.x[(i, k)] * s[c * n + k]).sum();
                if c >= n {
                    expected += d.p[(i, c - n)];
                }
                assert!((ds[c * n + i] - expected).abs() < 1e-14, "({i}, {c})");
            }
        }
    }

    /// A model of states `V`, `I`, parameters `w`, `theta`, a `let`
    /// `kick = I * w`, the flow `flow` (of `V`, then `I`), one transition
    /// with guard `guard` and the reset `reset` (a JSON object's body).
    fn one_transition(flow: (&str, &str), guard: &str, reset: &str) -> EquationModel {
        EquationModel::from_json_str(&format!(
            r#"{{"states": ["V", "I"], "params": {{"w": 2.0, "theta": 1.5}},
                "let": {{"kick": "I * w"}},
                "modes": {{"m": {{"flow": {{"V": "{}", "I": "{}"}}}}}},
                "transitions": [{{"name": "fire", "from": "m", "to": "m", "guard": "{guard}",
                                  "direction": "rising", "reset": {{{reset}}}}}]}}"#,
            flow.0, flow.1
        ))
        .unwrap()
    }

    /// `Reset::writes_entrywise` inferred from the reset's expressions, by
    /// hand: true exactly when no written entry's new value reads another
    /// state entry (time and parameters are free), through `let`s too.
    #[rstest::rstest]
    #[case(r#""I": "I + w""#, true)] // reads only itself
    #[case(r#""V": "0""#, true)] // reads nothing
    #[case(r#""V": "0", "I": "I + w * exp(-t)""#, true)] // itself, a parameter and time
    #[case(r#""V": "V * theta", "I": "I - w""#, true)] // each from itself
    #[case(r#""V": "I""#, false)] // V's new value reads I
    #[case(r#""I": "I + V""#, false)] // I's reads V besides itself
    #[case(r#""V": "I", "I": "V""#, false)] // a swap: each reads the other
    #[case(r#""V": "kick""#, false)] // reads I through the let
    #[case(r#""I": "kick""#, true)] // the let reads I itself only
    fn writes_entrywise_is_inferred(#[case] reset: &str, #[case] entrywise: bool) {
        let model = one_transition(("-V + I", "-I"), "V - theta", reset);
        let system = model.system();
        let reset_of = &system.transitions()[0].reset;
        assert_eq!(reset_of.writes_entrywise(), entrywise, "{reset}");
    }

    /// What a reset writes and reads, from its expressions: the written
    /// entries in the order written, the read ones through `let`s, sorted.
    #[test]
    fn resets_declare_what_they_write_and_read() {
        let model = one_transition(("-V + I", "-I"), "V - theta", r#""I": "0", "V": "kick""#);
        let system = model.system();
        let reset = &system.transitions()[0].reset;
        assert_eq!(reset.writes(), Some(&[1, 0][..]));
        assert_eq!(reset.reads(), Some(&[1][..]));
    }

    /// Guards written `x_k - level` or `t - level` (or `x_k`, `t`) with a
    /// level of the parameters alone declare their threshold, its level
    /// the parameters' value (by hand: a parameter or a number read
    /// directly, an expression through the guard); any other form
    /// declares none.
    #[rstest::rstest]
    #[case("V - theta", Some(0), None, Some(1.5))]
    #[case("V - (theta + w)", Some(0), None, Some(3.5))]
    #[case("I", Some(1), None, Some(0.0))]
    #[case("t - 2 * theta", None, Some(3.0), None)]
    #[case("V - 1.25", Some(0), None, Some(1.25))] // a number, read directly
    #[case("t - w", None, Some(2.0), None)] // a parameter, read directly
    #[case("t", None, Some(0.0), None)]
    #[case("V - I", None, None, None)] // the level reads a state
    #[case("V - t", None, None, None)] // the level reads time
    #[case("theta - V", None, None, None)] // not the form (its sign is the other)
    #[case("2 * V - theta", None, None, None)]
    fn thresholds_are_inferred(
        #[case] guard: &str,
        #[case] state: Option<usize>,
        #[case] time: Option<f64>,
        #[case] level: Option<f64>,
    ) {
        let model = one_transition(("-V + I", "-I"), guard, r#""V": "0""#);
        let system = model.system();
        let g = &system.transitions()[0].guard;
        let p = [2.0, 1.5];
        let threshold = g.threshold(&p);
        assert_eq!(threshold.map(|th| th.state), state, "{guard}");
        assert_eq!(threshold.map(|th| th.level), level, "{guard}");
        assert_eq!(g.time_threshold(&p), time, "{guard}");
    }

    /// Linear blocks of an affine flow with coefficients of the parameters,
    /// against the coefficients written out by hand: `V' = (-V + I) / w`,
    /// `I' = theta - I` pair up as `[[-1/w, 1/w], [0, -1]]`, `b = [0, theta]`;
    /// a flow that reads time, is not affine, or couples an entry to two
    /// others declares none.
    #[test]
    fn linear_flows_declare_their_blocks() {
        let blocks_of = |flow: (&str, &str)| {
            let system = one_transition(flow, "V - theta", r#""V": "0""#).system();
            let mut blocks = LinearBlocks::new(2);
            system.modes()[0]
                .flow
                .linear_blocks(&[2.0, 1.5], &mut blocks)
                .then_some(blocks)
        };
        let blocks = blocks_of(("(-V + I) / w", "theta - I")).unwrap();
        assert_eq!(blocks.pairs.len(), 1);
        let pair = blocks.pairs[0];
        assert_eq!(pair.entries, [0, 1]);
        let a = [[-1.0 / 2.0, 1.0 / 2.0], [0.0, -1.0]];
        for (row, expected) in pair.a.iter().zip(&a) {
            for (&got, &want) in row.iter().zip(expected) {
                assert!((got - want).abs() <= 1e-15, "{:?}", pair.a);
            }
        }
        assert_eq!(pair.b, [0.0, 1.5]);
        // Decoupled entries: no pair, `a` and `b` per entry.
        let decoupled = blocks_of(("-w * V", "theta")).unwrap();
        assert!(decoupled.pairs.is_empty());
        assert_eq!(
            (decoupled.a, decoupled.b),
            (vec![-2.0, 0.0], vec![0.0, 1.5])
        );
        assert!(blocks_of(("-V + sin(t)", "-I")).is_none());
        assert!(blocks_of(("-V * I", "-I")).is_none());
        let three = EquationModel::from_json_str(
            r#"{"states": ["a", "b", "c"], "modes": {"m": {"flow": {"a": "b", "b": "a + c", "c": "-c"}}}}"#,
        )
        .unwrap()
        .system();
        let mut blocks = LinearBlocks::new(3);
        assert!(!three.modes()[0].flow.linear_blocks(&[], &mut blocks));
    }

    /// The reverse sweep's products equal `f_x^T v` and `f_p^T v` formed
    /// from the same dense partials.
    #[test]
    fn vector_jacobian_product_equals_the_partials_transposed() {
        let model = EquationModel::from_json_str(
            r#"{"states": ["a", "w"], "params": {"g": 9.81, "c": 0.3},
                "let": {"drag": "c * w * abs(w)"},
                "modes": {"swing": {"flow": {"a": "w / sqrt(1 + a^2)", "w": "-g * sin(a) - drag + atan2(a, w) * tanh(c)"}}}}"#,
        )
        .unwrap();
        let system = model.system();
        let flow = &system.modes()[0].flow;
        let (t, x, p, v) = (0.4, [0.7, -1.2], [9.81, 0.3], [0.8, -1.7]);
        let (mut x_bar, mut p_bar) = ([0.0; 2], [1.0, 2.0]);
        assert!(flow.vector_jacobian_product(t, &x, &p, &v, &mut x_bar, &mut p_bar));
        let mut d = FlowPartials::zeros(2, 2);
        flow.partials(t, &x, &p, &mut d);
        for j in 0..2 {
            let fx: f64 = (0..2).map(|i| d.x[(i, j)] * v[i]).sum();
            let fp: f64 = (0..2).map(|i| d.p[(i, j)] * v[i]).sum();
            assert!((x_bar[j] - fx).abs() < 1e-14, "x {j}: {} vs {fx}", x_bar[j]);
            let before = [1.0, 2.0][j];
            assert!((p_bar[j] - before - fp).abs() < 1e-14, "p {j}");
        }
    }
}
