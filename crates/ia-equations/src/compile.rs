//! The compiled form: a flat list of register instructions, run in one loop
//! over any [`Scalar`] with registers on the stack (no recursion and no
//! allocation per evaluation for programs of up to [`STACK_REGISTERS`]
//! registers).
//!
//! Register layout of a program: `t`, then the states, then the parameters,
//! then the constants, then one register per instruction (each instruction
//! writes a fresh register, so a `let` used twice is computed once).

use crate::expr::{BinaryOp, Expr, Function, Name};
use ia_core::num_dual::Dual64;
use ia_core::Scalar;

/// Registers kept on the stack before an evaluation falls back to the heap.
pub const STACK_REGISTERS: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Add(u32, u32),
    Sub(u32, u32),
    Mul(u32, u32),
    Div(u32, u32),
    Neg(u32),
    /// `a^n` for a constant integer exponent.
    PowInt(u32, i32),
    /// `a^c` for a constant exponent.
    PowConst(u32, f64),
    /// `a^b` with a varying exponent: `exp(b ln a)`.
    Pow(u32, u32),
    Unary(Function, u32),
    Binary(Function, u32, u32),
}

/// One compiled program: instructions and the registers holding its outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    n_states: usize,
    n_params: usize,
    constants: Vec<f64>,
    code: Vec<Op>,
    outputs: Vec<u32>,
    /// Every instruction is `+ - * /` or a negation: the forward-sensitivity
    /// rate then takes all its columns in one pass ([`Program::sensitivity_rate`]).
    arithmetic: bool,
}

/// The most floats (registers times one plus the columns) of one pass of
/// [`Program::sensitivity_rate`] over all its columns, on the stack.
const PASS_FLOATS: usize = 1024;

/// Builds a [`Program`] from expressions, one output each.
pub struct Compiler<'a> {
    program: Program,
    /// The `let` expressions, by index.
    lets: &'a [Expr],
    /// The register of each `let` already computed in this program.
    let_registers: Vec<Option<u32>>,
}

impl<'a> Compiler<'a> {
    /// A compiler for a model with `n_states` states and `n_params`
    /// parameters, whose `let` intermediates are `lets`.
    pub fn new(n_states: usize, n_params: usize, lets: &'a [Expr]) -> Self {
        Self {
            program: Program {
                n_states,
                n_params,
                constants: Vec::new(),
                code: Vec::new(),
                outputs: Vec::new(),
                arithmetic: false,
            },
            lets,
            let_registers: vec![None; lets.len()],
        }
    }

    /// Adds `e` as the next output.
    pub fn output(&mut self, e: &Expr) {
        let r = self.expr(e);
        self.program.outputs.push(r);
    }

    /// The finished program.
    pub fn finish(self) -> Program {
        let mut program = self.program;
        // Constants sit between the parameters and the instruction registers:
        // renumber the instruction registers now that their count is known.
        let base = program.input_len() as u32;
        let shift = program.constants.len() as u32;
        let relocate = |r: u32| {
            if r >= TEMP_MARK {
                r - TEMP_MARK + base + shift
            } else {
                r
            }
        };
        for op in &mut program.code {
            *op = match *op {
                Op::Add(a, b) => Op::Add(relocate(a), relocate(b)),
                Op::Sub(a, b) => Op::Sub(relocate(a), relocate(b)),
                Op::Mul(a, b) => Op::Mul(relocate(a), relocate(b)),
                Op::Div(a, b) => Op::Div(relocate(a), relocate(b)),
                Op::Neg(a) => Op::Neg(relocate(a)),
                Op::PowInt(a, n) => Op::PowInt(relocate(a), n),
                Op::PowConst(a, c) => Op::PowConst(relocate(a), c),
                Op::Pow(a, b) => Op::Pow(relocate(a), relocate(b)),
                Op::Unary(f, a) => Op::Unary(f, relocate(a)),
                Op::Binary(f, a, b) => Op::Binary(f, relocate(a), relocate(b)),
            };
        }
        for r in &mut program.outputs {
            *r = relocate(*r);
        }
        program.arithmetic = program.code.iter().all(|op| {
            matches!(
                op,
                Op::Add(..) | Op::Sub(..) | Op::Mul(..) | Op::Div(..) | Op::Neg(..)
            )
        });
        program
    }

    fn constant(&mut self, v: f64) -> u32 {
        let k = match self
            .program
            .constants
            .iter()
            .position(|c| c.to_bits() == v.to_bits())
        {
            Some(k) => k,
            None => {
                self.program.constants.push(v);
                self.program.constants.len() - 1
            }
        };
        (self.program.input_len() + k) as u32
    }

    fn push(&mut self, op: Op) -> u32 {
        self.program.code.push(op);
        TEMP_MARK + self.program.code.len() as u32 - 1
    }

    fn expr(&mut self, e: &Expr) -> u32 {
        match e {
            Expr::Number(v) => self.constant(*v),
            Expr::Name(Name::Time) => 0,
            Expr::Name(Name::State(i)) => 1 + *i as u32,
            Expr::Name(Name::Param(i)) => (1 + self.program.n_states + i) as u32,
            Expr::Name(Name::Let(i)) => match self.let_registers[*i] {
                Some(r) => r,
                None => {
                    let lets = self.lets;
                    let r = self.expr(&lets[*i]);
                    self.let_registers[*i] = Some(r);
                    r
                }
            },
            Expr::Neg(a) => {
                let a = self.expr(a);
                self.push(Op::Neg(a))
            }
            Expr::Binary(BinaryOp::Pow, a, b) => {
                let base = self.expr(a);
                match constant_value(b) {
                    Some(c) if c.fract() == 0.0 && c.abs() <= 64.0 => {
                        self.push(Op::PowInt(base, c as i32))
                    }
                    Some(c) => self.push(Op::PowConst(base, c)),
                    None => {
                        let exponent = self.expr(b);
                        self.push(Op::Pow(base, exponent))
                    }
                }
            }
            Expr::Binary(op, a, b) => {
                let (a, b) = (self.expr(a), self.expr(b));
                self.push(match op {
                    BinaryOp::Add => Op::Add(a, b),
                    BinaryOp::Sub => Op::Sub(a, b),
                    BinaryOp::Mul => Op::Mul(a, b),
                    BinaryOp::Div => Op::Div(a, b),
                    BinaryOp::Pow => unreachable!("handled above"),
                })
            }
            Expr::Call(f, args) => {
                let a = self.expr(&args[0]);
                if f.arity() == 2 {
                    let b = self.expr(&args[1]);
                    self.push(Op::Binary(*f, a, b))
                } else {
                    self.push(Op::Unary(*f, a))
                }
            }
        }
    }
}

/// Instruction registers are numbered from here until [`Compiler::finish`]
/// knows how many constants precede them.
const TEMP_MARK: u32 = 1 << 30;

/// The value of an expression made of numbers only (`2`, `-1`, `-(0.5)`).
fn constant_value(e: &Expr) -> Option<f64> {
    match e {
        Expr::Number(v) => Some(*v),
        Expr::Neg(a) => constant_value(a).map(|v| -v),
        _ => None,
    }
}

impl Program {
    fn input_len(&self) -> usize {
        1 + self.n_states + self.n_params
    }

    /// Number of registers an evaluation uses.
    pub fn registers(&self) -> usize {
        self.input_len() + self.constants.len() + self.code.len()
    }

    /// Number of outputs.
    pub fn outputs(&self) -> usize {
        self.outputs.len()
    }

    /// Number of instructions.
    pub fn instructions(&self) -> usize {
        self.code.len()
    }

    /// The `(output, state)` pairs where the output reads the state,
    /// through any instruction (structurally: an output that multiplies a
    /// state by zero still reads it), output by output.
    pub fn state_dependencies(&self) -> Vec<(usize, usize)> {
        let n = self.n_states;
        let first = self.input_len() + self.constants.len();
        let mut reads: Vec<Vec<usize>> = (0..first)
            .map(|r| {
                if (1..=n).contains(&r) {
                    vec![r - 1]
                } else {
                    Vec::new()
                }
            })
            .collect();
        for op in &self.code {
            let (a, b) = match *op {
                Op::Add(a, b) | Op::Sub(a, b) | Op::Mul(a, b) | Op::Div(a, b) => (a, Some(b)),
                Op::Pow(a, b) | Op::Binary(_, a, b) => (a, Some(b)),
                Op::Neg(a) | Op::PowInt(a, _) | Op::PowConst(a, _) | Op::Unary(_, a) => (a, None),
            };
            let mut states = reads[a as usize].clone();
            if let Some(b) = b {
                states.extend_from_slice(&reads[b as usize]);
                states.sort_unstable();
                states.dedup();
            }
            reads.push(states);
        }
        self.outputs
            .iter()
            .enumerate()
            .flat_map(|(k, &o)| reads[o as usize].iter().map(move |&j| (k, j)))
            .collect()
    }

    /// Whether every output is affine in the states with coefficients that
    /// depend on the parameters only, `f(t, x, p) = A(p) x + b(t, p)`, so
    /// that its state Jacobian `A(p)` is the same at every `(t, x)`
    /// ([`ia_core::Flow::state_jacobian_is_constant`]). Read off the
    /// instructions structurally: each register is classed as free of
    /// states and time, free of states, affine in the states with
    /// time-free coefficients, or other; sums keep the larger class,
    /// products and quotients stay affine only when the other factor (the
    /// divisor) is free of states and time, and any function of a state is
    /// other. Conservative: `x * x - x * x` counts as not affine.
    pub fn state_jacobian_is_constant(&self) -> bool {
        /// Free of states and time; free of states; affine; other.
        const CONST: u8 = 0;
        const TIME: u8 = 1;
        const AFFINE: u8 = 2;
        const OTHER: u8 = 3;
        let n = self.n_states;
        let first = self.input_len() + self.constants.len();
        let mut class: Vec<u8> = (0..first)
            .map(|r| match r {
                0 => TIME,
                r if r <= n => AFFINE,
                _ => CONST,
            })
            .collect();
        for op in &self.code {
            let of = |r: u32| class[r as usize];
            let c = match *op {
                Op::Add(a, b) | Op::Sub(a, b) => of(a).max(of(b)),
                Op::Neg(a) => of(a),
                Op::Mul(a, b) => match (of(a), of(b)) {
                    (x, CONST) | (CONST, x) => x,
                    (TIME, TIME) => TIME,
                    _ => OTHER,
                },
                Op::Div(a, b) => match (of(a), of(b)) {
                    (x, CONST) => x,
                    (CONST | TIME, TIME) => TIME,
                    _ => OTHER,
                },
                Op::PowInt(a, _) | Op::PowConst(a, _) | Op::Unary(_, a) => match of(a) {
                    x @ (CONST | TIME) => x,
                    _ => OTHER,
                },
                Op::Pow(a, b) | Op::Binary(_, a, b) => match of(a).max(of(b)) {
                    x @ (CONST | TIME) => x,
                    _ => OTHER,
                },
            };
            class.push(c);
        }
        self.outputs.iter().all(|&o| class[o as usize] <= AFFINE)
    }

    /// Evaluates the program at `(t, x, p)` and hands output `k` to
    /// `store(k, value)`.
    #[inline]
    pub fn eval<S: Scalar>(&self, t: S, x: &[S], p: &[S], store: impl FnMut(usize, S)) {
        let (n, np) = (self.n_states, self.n_params);
        self.eval_loaded(
            |r: &mut [S]| {
                r[0] = t;
                r[1..1 + n].copy_from_slice(&x[..n]);
                r[1 + n..1 + n + np].copy_from_slice(&p[..np]);
            },
            store,
        );
    }

    /// Evaluates a program of one output.
    #[inline]
    pub fn eval_one<S: Scalar>(&self, t: S, x: &[S], p: &[S]) -> S {
        let mut out = S::from(0.0);
        self.eval(t, x, p, |_, v| out = v);
        out
    }

    /// The forward-sensitivity rate `f_x S + [0 | f_p]` of a flow program,
    /// for the n x m sensitivity `s` (column-major: initial-state columns,
    /// then parameter columns): one dual-number evaluation per column,
    /// seeded with the column (and the column's parameter), without forming
    /// the partials.
    ///
    /// A program of `+ - * /` and negations only takes every column in one
    /// pass instead (the values once, each instruction's slopes for all the
    /// columns together, by the dual numbers' rules in the same order: the
    /// same numbers to the bit).
    pub fn sensitivity_rate(&self, t: f64, x: &[f64], p: &[f64], s: &[f64], ds: &mut [f64]) {
        let n = self.n_states;
        let floats = self.registers() * (s.len() / n.max(1) + 1);
        if self.arithmetic && floats <= PASS_FLOATS {
            if floats <= PASS_FLOATS / 4 {
                let mut buffer = [0.0; PASS_FLOATS / 4];
                self.columns_in_one_pass(t, x, p, s, ds, &mut buffer[..floats]);
            } else {
                let mut buffer = [0.0; PASS_FLOATS];
                self.columns_in_one_pass(t, x, p, s, ds, &mut buffer[..floats]);
            }
            return;
        }
        self.columns_one_by_one(t, x, p, s, ds);
    }

    /// [`Program::sensitivity_rate`] column by column: one dual-number
    /// evaluation each.
    fn columns_one_by_one(&self, t: f64, x: &[f64], p: &[f64], s: &[f64], ds: &mut [f64]) {
        let (n, np) = (self.n_states, self.n_params);
        for (c, (column, rate)) in s.chunks_exact(n).zip(ds.chunks_exact_mut(n)).enumerate() {
            let seeded_param = c.checked_sub(n);
            self.eval_loaded(
                |r: &mut [Dual64]| {
                    r[0] = Dual64::from_re(t);
                    for ((slot, &v), &dv) in r[1..1 + n].iter_mut().zip(x).zip(column) {
                        *slot = Dual64::new(v, dv);
                    }
                    for (j, (slot, &v)) in r[1 + n..1 + n + np].iter_mut().zip(p).enumerate() {
                        *slot = Dual64::new(v, if Some(j) == seeded_param { 1.0 } else { 0.0 });
                    }
                },
                |k, v| rate[k] = v.eps,
            );
        }
    }

    /// The directional rate `f_x e` of a flow program for the state
    /// direction `e` that is 1 at the states `seeded` and 0 elsewhere (no
    /// parameter seeded): one dual-number evaluation, output `k`'s slope
    /// handed to `store(k, slope)`. Allocates nothing (for programs of up to
    /// [`STACK_REGISTERS`] registers).
    pub(crate) fn seeded_state_rate(
        &self,
        t: f64,
        x: &[f64],
        p: &[f64],
        seeded: &[usize],
        mut store: impl FnMut(usize, f64),
    ) {
        let (n, np) = (self.n_states, self.n_params);
        self.eval_loaded(
            |r: &mut [Dual64]| {
                r[0] = Dual64::from_re(t);
                for (slot, &v) in r[1..1 + n].iter_mut().zip(x) {
                    *slot = Dual64::from_re(v);
                }
                for &c in seeded {
                    r[1 + c].eps = 1.0;
                }
                for (slot, &v) in r[1 + n..1 + n + np].iter_mut().zip(p) {
                    *slot = Dual64::from_re(v);
                }
            },
            |k, v| store(k, v.eps),
        );
    }

    /// [`Program::sensitivity_rate`] of an arithmetic program in one pass:
    /// `buffer` (zeroed, `registers (m + 1)` floats for `m` columns) holds
    /// the registers' values, then their slopes, `m` a register.
    fn columns_in_one_pass(
        &self,
        t: f64,
        x: &[f64],
        p: &[f64],
        s: &[f64],
        ds: &mut [f64],
        buffer: &mut [f64],
    ) {
        let (n, np) = (self.n_states, self.n_params);
        let m = s.len() / n;
        let (re, eps) = buffer.split_at_mut(self.registers());
        re[0] = t;
        for (i, &v) in x[..n].iter().enumerate() {
            re[1 + i] = v;
            for (slope, column) in eps[(1 + i) * m..(2 + i) * m]
                .iter_mut()
                .zip(s.chunks_exact(n))
            {
                *slope = column[i];
            }
        }
        re[1 + n..1 + n + np].copy_from_slice(&p[..np]);
        // Column n + j is seeded with parameter j.
        for c in n..m.min(n + np) {
            eps[(1 + c) * m + c] = 1.0;
        }
        let base = self.input_len();
        re[base..base + self.constants.len()].copy_from_slice(&self.constants);
        let first = base + self.constants.len();
        for (out, op) in (first..).zip(&self.code) {
            let (done, rest) = eps.split_at_mut(out * m);
            let target = &mut rest[..m];
            let slopes = |r: u32| &done[r as usize * m..(r as usize + 1) * m];
            // The rules of `num_dual`'s `Dual64` operations, term by term.
            re[out] = match *op {
                Op::Add(a, b) => {
                    for ((o, &da), &db) in target.iter_mut().zip(slopes(a)).zip(slopes(b)) {
                        *o = da + db;
                    }
                    re[a as usize] + re[b as usize]
                }
                Op::Sub(a, b) => {
                    for ((o, &da), &db) in target.iter_mut().zip(slopes(a)).zip(slopes(b)) {
                        *o = da - db;
                    }
                    re[a as usize] - re[b as usize]
                }
                Op::Mul(a, b) => {
                    let (ra, rb) = (re[a as usize], re[b as usize]);
                    for ((o, &da), &db) in target.iter_mut().zip(slopes(a)).zip(slopes(b)) {
                        *o = da * rb + db * ra;
                    }
                    ra * rb
                }
                Op::Div(a, b) => {
                    let (ra, rb) = (re[a as usize], re[b as usize]);
                    let inv = rb.recip();
                    for ((o, &da), &db) in target.iter_mut().zip(slopes(a)).zip(slopes(b)) {
                        *o = (da * rb - db * ra) * inv * inv;
                    }
                    ra * inv
                }
                Op::Neg(a) => {
                    for (o, &da) in target.iter_mut().zip(slopes(a)) {
                        *o = -da;
                    }
                    -re[a as usize]
                }
                _ => unreachable!("an arithmetic program"),
            };
        }
        for (k, &o) in self.outputs.iter().enumerate() {
            for (c, &slope) in eps[o as usize * m..(o as usize + 1) * m].iter().enumerate() {
                ds[c * n + k] = slope;
            }
        }
    }

    /// The adjoint products of a program: writes `f_x^T v` into `x_bar` and
    /// adds `f_p^T v` to `p_bar`, by one evaluation and one reverse sweep
    /// over the instructions (each instruction hands its adjoint to its
    /// operands by the derivative of its operation, the same rules as the
    /// dual numbers of [`Program::eval`]; the tests hold the two together).
    pub fn vector_jacobian_product(
        &self,
        t: f64,
        x: &[f64],
        p: &[f64],
        v: &[f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) {
        let len = self.registers();
        if 2 * len <= STACK_REGISTERS {
            let mut registers = [0.0; STACK_REGISTERS];
            let (values, adjoints) = registers.split_at_mut(len);
            self.sweep(t, x, p, v, values, &mut adjoints[..len], x_bar, p_bar);
        } else {
            let (mut values, mut adjoints) = (vec![0.0; len], vec![0.0; len]);
            self.sweep(t, x, p, v, &mut values, &mut adjoints, x_bar, p_bar);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn sweep(
        &self,
        t: f64,
        x: &[f64],
        p: &[f64],
        v: &[f64],
        r: &mut [f64],
        bar: &mut [f64],
        x_bar: &mut [f64],
        p_bar: &mut [f64],
    ) {
        let (n, np) = (self.n_states, self.n_params);
        r[0] = t;
        r[1..1 + n].copy_from_slice(&x[..n]);
        r[1 + n..1 + n + np].copy_from_slice(&p[..np]);
        self.run(r, &mut |_, _| {});
        for (&o, &w) in self.outputs.iter().zip(v) {
            bar[o as usize] += w;
        }
        let first = self.input_len() + self.constants.len();
        for (out, op) in (first..first + self.code.len()).zip(&self.code).rev() {
            let w = bar[out];
            if w == 0.0 {
                continue;
            }
            let value = r[out];
            let g = |k: u32| r[k as usize];
            let mut give = |k: u32, d: f64| bar[k as usize] += w * d;
            match *op {
                Op::Add(a, b) => {
                    give(a, 1.0);
                    give(b, 1.0);
                }
                Op::Sub(a, b) => {
                    give(a, 1.0);
                    give(b, -1.0);
                }
                Op::Mul(a, b) => {
                    give(a, g(b));
                    give(b, g(a));
                }
                Op::Div(a, b) => {
                    give(a, 1.0 / g(b));
                    give(b, -value / g(b));
                }
                Op::Neg(a) => give(a, -1.0),
                Op::PowInt(a, k) => give(a, f64::from(k) * g(a).powi(k - 1)),
                Op::PowConst(a, c) => give(a, c * g(a).powf(c - 1.0)),
                Op::Pow(a, b) => {
                    give(a, g(b) * g(a).powf(g(b) - 1.0));
                    if g(a) > 0.0 {
                        give(b, value * g(a).ln());
                    }
                }
                Op::Unary(f, a) => {
                    let u = g(a);
                    give(
                        a,
                        match f {
                            Function::Sin => u.cos(),
                            Function::Cos => -u.sin(),
                            Function::Tan => 1.0 / (u.cos() * u.cos()),
                            Function::Exp => value,
                            Function::Log => 1.0 / u,
                            Function::Sqrt => 0.5 / value,
                            Function::Abs => {
                                if u < 0.0 {
                                    -1.0
                                } else {
                                    1.0
                                }
                            }
                            Function::Tanh => 1.0 - value * value,
                            Function::Atan2 | Function::Min | Function::Max => {
                                unreachable!("binary functions")
                            }
                        },
                    );
                }
                Op::Binary(f, a, b) => {
                    let (u, q) = (g(a), g(b));
                    match f {
                        Function::Atan2 => {
                            let norm = u * u + q * q;
                            give(a, q / norm);
                            give(b, -u / norm);
                        }
                        Function::Min => give(if q < u { b } else { a }, 1.0),
                        Function::Max => give(if q > u { b } else { a }, 1.0),
                        _ => unreachable!("unary functions"),
                    }
                }
            }
        }
        x_bar[..n].copy_from_slice(&bar[1..1 + n]);
        for (pb, &b) in p_bar.iter_mut().zip(&bar[1 + n..1 + n + np]) {
            *pb += b;
        }
    }

    /// Evaluates with the input registers (`t`, states, parameters) written
    /// by `load`.
    #[inline]
    fn eval_loaded<S: Scalar>(&self, load: impl FnOnce(&mut [S]), mut store: impl FnMut(usize, S)) {
        let len = self.registers();
        let zero = S::from(0.0);
        // Small models take a small array: filling 128 registers would cost
        // more than evaluating a few instructions.
        if len <= 16 {
            let mut registers = [zero; 16];
            load(&mut registers[..len]);
            self.run(&mut registers[..len], &mut store);
        } else if len <= 32 {
            let mut registers = [zero; 32];
            load(&mut registers[..len]);
            self.run(&mut registers[..len], &mut store);
        } else if len <= 64 {
            let mut registers = [zero; 64];
            load(&mut registers[..len]);
            self.run(&mut registers[..len], &mut store);
        } else if len <= STACK_REGISTERS {
            let mut registers = [zero; STACK_REGISTERS];
            load(&mut registers[..len]);
            self.run(&mut registers[..len], &mut store);
        } else {
            let mut registers = vec![zero; len];
            load(&mut registers);
            self.run(&mut registers, &mut store);
        }
    }

    #[inline]
    fn run<S: Scalar>(&self, r: &mut [S], store: &mut impl FnMut(usize, S)) {
        let base = self.input_len();
        for (slot, &c) in r[base..].iter_mut().zip(&self.constants) {
            *slot = S::from(c);
        }
        let first = base + self.constants.len();
        for (out, op) in (first..).zip(&self.code) {
            let g = |k: u32| r[k as usize];
            let v = match *op {
                Op::Add(a, b) => g(a) + g(b),
                Op::Sub(a, b) => g(a) - g(b),
                Op::Mul(a, b) => g(a) * g(b),
                Op::Div(a, b) => g(a) / g(b),
                Op::Neg(a) => -g(a),
                Op::PowInt(a, k) => g(a).powi(k),
                Op::PowConst(a, c) => pow_const(g(a), c),
                Op::Pow(a, b) => pow(g(a), g(b)),
                Op::Unary(f, a) => unary(f, g(a)),
                Op::Binary(f, a, b) => binary(f, g(a), g(b)),
            };
            r[out] = v;
        }
        for (k, &o) in self.outputs.iter().enumerate() {
            store(k, r[o as usize]);
        }
    }
}

#[inline]
fn unary<S: Scalar>(f: Function, a: S) -> S {
    match f {
        Function::Sin => a.sin(),
        Function::Cos => a.cos(),
        Function::Tan => a.tan(),
        Function::Exp => a.exp(),
        Function::Log => a.ln(),
        Function::Sqrt => a.sqrt(),
        // The derivative at 0 is taken from the right (+1).
        Function::Abs => {
            if a.re() < 0.0 {
                -a
            } else {
                a
            }
        }
        // (num-dual 0.15 forms tanh as sinh / cosh: NaN beyond about 710.)
        Function::Tanh => {
            let v = a.re().tanh();
            chain(a, v, 1.0 - v * v)
        }
        Function::Atan2 | Function::Min | Function::Max => unreachable!("binary functions"),
    }
}

/// `a^b` with a varying exponent: `exp(b ln a)` for `a > 0` (value set to
/// the exact `powf`); for `a <= 0`, where `ln a` does not exist, the
/// exponent is held at its value (`d(a^b)/db` is taken as 0, its limit at
/// `a = 0`, `b > 0`; a negative base with a fractional exponent gives NaN,
/// reported as a non-finite value).
#[inline]
fn pow<S: Scalar>(a: S, b: S) -> S {
    if a.re() > 0.0 {
        let w = (b * a.ln()).exp();
        w - S::from(w.re()) + S::from(a.re().powf(b.re()))
    } else {
        pow_const(a, b.re())
    }
}

/// `a^c` for a constant `c`, with the derivative `c a^(c-1)`. (num-dual
/// 0.15 forms the value as `a^(c-3) a a a`, which is NaN at `a = 0`.) Where
/// the derivative is not finite (`sqrt`-like powers at 0) the value is
/// still exact for `f64` and the derivative is what num-dual gives.
#[inline]
fn pow_const<S: Scalar>(a: S, c: f64) -> S {
    let x = a.re();
    let slope = c * x.powf(c - 1.0);
    if slope.is_finite() {
        chain(a, x.powf(c), slope)
    } else {
        a.powf(c)
    }
}

/// `g(a)` from its value `g(a.re)` and finite slope `g'(a.re)`: the value
/// exact (for `f64` the first term is `0 * slope = 0`), the derivative
/// parts of `a` times the slope.
#[inline]
fn chain<S: Scalar>(a: S, value: f64, slope: f64) -> S {
    (a - S::from(a.re())) * slope + S::from(value)
}

/// `atan2(a, b)` with the derivative `(b da - a db) / (a^2 + b^2)`
/// everywhere but the origin. (num-dual 0.15 forms it as `atan(a / b)`,
/// whose derivative is NaN where `b = 0`.) Of `atan(a / b)` and
/// `-atan(b / a)`, which share that derivative, the one dividing by the
/// larger argument is taken; the value is then set to the exact `atan2`.
#[inline]
fn atan2<S: Scalar>(a: S, b: S) -> S {
    let slope = if b.re().abs() >= a.re().abs() {
        (a / b).atan()
    } else {
        -(b / a).atan()
    };
    slope - S::from(slope.re()) + S::from(a.re().atan2(b.re()))
}

#[inline]
fn binary<S: Scalar>(f: Function, a: S, b: S) -> S {
    match f {
        Function::Atan2 => atan2(a, b),
        // On a tie the first argument is taken (value and derivative).
        Function::Min => {
            if b.re() < a.re() {
                b
            } else {
                a
            }
        }
        Function::Max => {
            if b.re() > a.re() {
                b
            } else {
                a
            }
        }
        _ => unreachable!("unary functions"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{parse, Printed, Scope};
    use ia_core::num_dual::Dual64;
    use proptest::prelude::*;

    /// Two states `x`, `y`, one parameter `k`, and `t`.
    struct Names;
    impl Scope for Names {
        fn resolve(&self, name: &str) -> Option<Name> {
            match name {
                "x" => Some(Name::State(0)),
                "y" => Some(Name::State(1)),
                "k" => Some(Name::Param(0)),
                "t" => Some(Name::Time),
                _ => None,
            }
        }
        fn names(&self) -> Vec<String> {
            ["x", "y", "k", "t"].map(String::from).to_vec()
        }
    }

    fn name_of(n: Name) -> &'static str {
        match n {
            Name::State(0) => "x",
            Name::State(_) => "y",
            Name::Param(_) => "k",
            Name::Time => "t",
            Name::Let(_) => unreachable!("no lets here"),
        }
    }

    const POINT: (f64, [f64; 2], [f64; 1]) = (0.7, [0.9, -1.3], [2.1]);

    /// Which flows have a state Jacobian constant in `(t, x)`, by hand
    /// (`f_x` of each written out: constant exactly in the `true` rows).
    #[rstest::rstest]
    #[case("-k * x + 2 * y", true)]
    #[case("k * (x - y) / 3 + sin(t) + k^2", true)]
    #[case("-(x / k) - exp(k * t)", true)]
    #[case("t", true)]
    #[case("x * y", false)]
    #[case("t * x", false)]
    #[case("x / t", false)]
    #[case("x^2", false)]
    #[case("sin(x)", false)]
    #[case("k / x", false)]
    #[case("max(x, 0)", false)]
    fn constant_state_jacobians_are_recognised(#[case] text: &str, #[case] constant: bool) {
        let mut c = Compiler::new(2, 1, &[]);
        c.output(&parse(text, &Names).unwrap());
        c.output(&parse("x", &Names).unwrap());
        assert_eq!(c.finish().state_jacobian_is_constant(), constant, "{text}");
    }

    /// The reference: value and derivative along `x` of the tree by the
    /// rules of calculus, written directly on `f64` pairs (no dual-number
    /// library, no compiler).
    fn reference(e: &Expr) -> (f64, f64) {
        let (t, x, p) = POINT;
        match e {
            Expr::Number(v) => (*v, 0.0),
            Expr::Name(Name::Time) => (t, 0.0),
            Expr::Name(Name::State(0)) => (x[0], 1.0),
            Expr::Name(Name::State(i)) => (x[*i], 0.0),
            Expr::Name(Name::Param(i)) => (p[*i], 0.0),
            Expr::Name(Name::Let(_)) => unreachable!("no lets here"),
            Expr::Neg(a) => {
                let (v, d) = reference(a);
                (-v, -d)
            }
            Expr::Binary(op, a, b) => {
                let ((u, du), (v, dv)) = (reference(a), reference(b));
                match op {
                    BinaryOp::Add => (u + v, du + dv),
                    BinaryOp::Sub => (u - v, du - dv),
                    BinaryOp::Mul => (u * v, du * v + u * dv),
                    BinaryOp::Div => (u / v, (du * v - u * dv) / (v * v)),
                    BinaryOp::Pow => {
                        let w = u.powf(v);
                        // d(u^v) = v u^(v-1) du + u^v ln(u) dv
                        let dw = v * u.powf(v - 1.0) * du
                            + if dv == 0.0 { 0.0 } else { w * u.ln() * dv };
                        (w, dw)
                    }
                }
            }
            Expr::Call(f, args) => {
                let (u, du) = reference(&args[0]);
                match f {
                    Function::Sin => (u.sin(), u.cos() * du),
                    Function::Cos => (u.cos(), -u.sin() * du),
                    Function::Tan => (u.tan(), du / (u.cos() * u.cos())),
                    Function::Exp => (u.exp(), u.exp() * du),
                    Function::Log => (u.ln(), du / u),
                    Function::Sqrt => (u.sqrt(), du / (2.0 * u.sqrt())),
                    Function::Abs => (u.abs(), if u < 0.0 { -du } else { du }),
                    Function::Tanh => (u.tanh(), (1.0 - u.tanh() * u.tanh()) * du),
                    Function::Atan2 | Function::Min | Function::Max => {
                        let (v, dv) = reference(&args[1]);
                        match f {
                            Function::Atan2 => (u.atan2(v), (v * du - u * dv) / (u * u + v * v)),
                            Function::Min if v < u => (v, dv),
                            Function::Min => (u, du),
                            Function::Max if v > u => (v, dv),
                            _ => (u, du),
                        }
                    }
                }
            }
        }
    }

    /// Whether every subtree has a finite reference value and derivative.
    fn finite_everywhere(e: &Expr) -> bool {
        let (v, d) = reference(e);
        v.is_finite()
            && d.is_finite()
            && match e {
                Expr::Number(_) | Expr::Name(_) => true,
                Expr::Neg(a) => finite_everywhere(a),
                Expr::Binary(_, a, b) => finite_everywhere(a) && finite_everywhere(b),
                Expr::Call(_, args) => args.iter().all(finite_everywhere),
            }
    }

    /// Whether no `min`, `max` or `abs` in the tree sits on its kink (two
    /// arguments within rounding of each other, or `abs` at zero), where
    /// the derivative is not defined and either side's is a valid answer.
    fn clear_of_kinks(e: &Expr) -> bool {
        let apart = |u: f64, v: f64| (u - v).abs() > 1e-9 * u.abs().max(v.abs()).max(1.0);
        match e {
            Expr::Number(_) | Expr::Name(_) => true,
            Expr::Neg(a) => clear_of_kinks(a),
            Expr::Binary(_, a, b) => clear_of_kinks(a) && clear_of_kinks(b),
            Expr::Call(f, args) => {
                let kink_free = match (f, &args[..]) {
                    (Function::Min | Function::Max, [a, b]) => {
                        apart(reference(a).0, reference(b).0)
                    }
                    (Function::Abs, [a]) => apart(reference(a).0, 0.0),
                    _ => true,
                };
                kink_free && args.iter().all(clear_of_kinks)
            }
        }
    }

    fn tree() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            (0.1f64..3.0).prop_map(Expr::Number),
            (0u32..4).prop_map(|k| Expr::Number(f64::from(k))),
            Just(Expr::Name(Name::State(0))),
            Just(Expr::Name(Name::State(1))),
            Just(Expr::Name(Name::Param(0))),
            Just(Expr::Name(Name::Time)),
        ];
        leaf.prop_recursive(5, 40, 2, |inner| {
            let ops = prop_oneof![
                Just(BinaryOp::Add),
                Just(BinaryOp::Sub),
                Just(BinaryOp::Mul),
                Just(BinaryOp::Div),
                Just(BinaryOp::Pow),
            ];
            let functions = proptest::sample::select(Function::ALL.to_vec());
            prop_oneof![
                inner.clone().prop_map(|a| Expr::Neg(Box::new(a))),
                (ops, inner.clone(), inner.clone()).prop_map(|(op, a, b)| Expr::Binary(
                    op,
                    Box::new(a),
                    Box::new(b)
                )),
                (functions, inner.clone(), inner).prop_map(|(f, a, b)| {
                    let args = if f.arity() == 2 { vec![a, b] } else { vec![a] };
                    Expr::Call(f, args)
                }),
            ]
        })
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-10 * a.abs().max(b.abs()).max(1.0)
    }

    /// An arithmetic program (`+ - * /`, negation, time, constants, both
    /// states and the parameter), or one that is not, with `columns`
    /// sensitivity columns: the rate in one pass is the column-by-column
    /// one (its reference: one dual-number evaluation per column) to the
    /// bit.
    #[rstest::rstest]
    #[case(&["-k * x + 2 * y / (x - 3)", "x * y - t / k - -(y)"], 3, true)]
    #[case(&["k / x - (y * y) / (1 + k * t)", "x"], 3, true)]
    #[case(&["-k * x + 2 * y / (x - 3)", "x * y - t / k"], 1, true)]
    #[case(&["sin(x) * k", "y^2"], 3, false)]
    fn the_rate_in_one_pass_is_the_rate_column_by_column(
        #[case] rates: &[&str],
        #[case] columns: usize,
        #[case] arithmetic: bool,
    ) {
        let mut c = Compiler::new(2, 1, &[]);
        for text in rates {
            c.output(&parse(text, &Names).unwrap());
        }
        let program = c.finish();
        assert_eq!(program.arithmetic, arithmetic);
        let (t, x, p) = POINT;
        let s: Vec<f64> = (0..2 * columns).map(|k| 0.37 * k as f64 - 0.9).collect();
        let (mut one_pass, mut by_column) = (vec![0.0; 2 * columns], vec![0.0; 2 * columns]);
        program.sensitivity_rate(t, &x, &p, &s, &mut one_pass);
        program.columns_one_by_one(t, &x, &p, &s, &mut by_column);
        for (a, b) in one_pass.iter().zip(&by_column) {
            assert_eq!(a.to_bits(), b.to_bits(), "{one_pass:?} vs {by_column:?}");
        }
        assert!(by_column.iter().any(|&v| v != 0.0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Printed, parsed back and compiled, a random tree gives the value
        /// and the derivative of the reference.
        #[test]
        fn compiled_trees_match_the_reference(e in tree()) {
            let text = Printed { expr: &e, names: &name_of }.to_string();
            let parsed = parse(&text, &Names).unwrap();
            prop_assert_eq!(&parsed, &e, "{}", text);
            let (value, derivative) = reference(&e);
            // Outside the domain (log of a negative number, 0/0, overflow,
            // anywhere in the tree: min and max can hide an infinity) and on
            // a kink of min, max or abs the comparison says nothing.
            prop_assume!(finite_everywhere(&e));
            prop_assume!(clear_of_kinks(&e));
            prop_assume!(value.abs() < 1e8 && derivative.abs() < 1e8);
            let mut c = Compiler::new(2, 1, &[]);
            c.output(&e);
            let program = c.finish();
            let (t, x, p) = POINT;
            let v = program.eval_one(t, &x, &p);
            prop_assert!(close(v, value), "{}: {} vs {}", text, v, value);
            let xd = [Dual64::new(x[0], 1.0), Dual64::from_re(x[1])];
            let d = program.eval_one(Dual64::from_re(t), &xd, &[Dual64::from_re(p[0])]);
            prop_assert!(close(d.re, value), "{}: {} vs {}", text, d.re, value);
            prop_assert!(close(d.eps, derivative), "{}: d/dx {} vs {}", text, d.eps, derivative);
            let (mut x_bar, mut p_bar) = ([0.0; 2], [0.5]);
            program.vector_jacobian_product(t, &x, &p, &[1.0], &mut x_bar, &mut p_bar);
            prop_assert!(close(x_bar[0], derivative), "{}: adjoint d/dx {} vs {}", text, x_bar[0], derivative);
            let kd = [Dual64::from_re(p[0]) + Dual64::new(0.0, 1.0)];
            let xs = [Dual64::from_re(x[0]), Dual64::from_re(x[1])];
            let dk = program.eval_one(Dual64::from_re(t), &xs, &kd).eps;
            if dk.is_finite() {
                prop_assert!(close(p_bar[0] - 0.5, dk), "{}: adjoint d/dk {} vs dual {}", text, p_bar[0] - 0.5, dk);
            }
        }

        /// A tree declared affine in the states with a constant Jacobian
        /// ([`Program::state_jacobian_is_constant`]) has the same
        /// derivatives along `x` and `y` (dual numbers) at two other
        /// points, to rounding: the declaration is never wrong.
        #[test]
        fn declared_constant_jacobians_are_constant(e in tree()) {
            let mut c = Compiler::new(2, 1, &[]);
            c.output(&e);
            let program = c.finish();
            prop_assume!(program.state_jacobian_is_constant());
            let p = [Dual64::from_re(POINT.2[0])];
            let slope = |t: f64, x: [f64; 2], along: usize| {
                let xd = [0, 1].map(|i| Dual64::new(x[i], if i == along { 1.0 } else { 0.0 }));
                program.eval_one(Dual64::from_re(t), &xd, &p).eps
            };
            for along in 0..2 {
                let (a, b) = (slope(POINT.0, POINT.1, along), slope(-2.3, [4.1, 0.2], along));
                prop_assume!(a.is_finite() && b.is_finite());
                prop_assert!((a - b).abs() <= 1e-12 * a.abs().max(1.0), "{:?}: {} vs {}", e, a, b);
            }
        }

        /// Garbage of expression characters never panics the parser.
        #[test]
        fn garbage_never_panics(text in "[-+*/^(),. 0-9a-zA-Z_eé#]{0,60}") {
            let _ = parse(&text, &Names);
        }

        /// Nor does any text at all.
        #[test]
        fn any_text_never_panics(text in any::<String>()) {
            let _ = parse(&text, &Names);
        }
    }
}
