//! The compiled form: a flat list of register instructions, run in one loop
//! over any [`Scalar`] with registers on the stack (no recursion and no
//! allocation per evaluation for programs of up to [`STACK_REGISTERS`]
//! registers).
//!
//! Register layout of a program: `t`, then the states, then the parameters,
//! then the constants, then one register per instruction (each instruction
//! writes a fresh register, so a `let` used twice is computed once).

use crate::expr::{BinaryOp, Expr, Function, Name};
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
}

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

    /// Evaluates the program at `(t, x, p)` and hands output `k` to
    /// `store(k, value)`.
    #[inline]
    pub fn eval<S: Scalar>(&self, t: S, x: &[S], p: &[S], mut store: impl FnMut(usize, S)) {
        let len = self.registers();
        let zero = S::from(0.0);
        if len <= STACK_REGISTERS {
            let mut registers = [zero; STACK_REGISTERS];
            self.run(t, x, p, &mut registers[..len], &mut store);
        } else {
            let mut registers = vec![zero; len];
            self.run(t, x, p, &mut registers, &mut store);
        }
    }

    /// Evaluates a program of one output.
    #[inline]
    pub fn eval_one<S: Scalar>(&self, t: S, x: &[S], p: &[S]) -> S {
        let mut out = S::from(0.0);
        self.eval(t, x, p, |_, v| out = v);
        out
    }

    #[inline]
    fn run<S: Scalar>(
        &self,
        t: S,
        x: &[S],
        p: &[S],
        r: &mut [S],
        store: &mut impl FnMut(usize, S),
    ) {
        let (n, np) = (self.n_states, self.n_params);
        r[0] = t;
        r[1..1 + n].copy_from_slice(&x[..n]);
        r[1 + n..1 + n + np].copy_from_slice(&p[..np]);
        let base = 1 + n + np;
        for (slot, &c) in r[base..].iter_mut().zip(&self.constants) {
            *slot = S::from(c);
        }
        let mut out = base + self.constants.len();
        for op in &self.code {
            let g = |k: u32| r[k as usize];
            let v = match *op {
                Op::Add(a, b) => g(a) + g(b),
                Op::Sub(a, b) => g(a) - g(b),
                Op::Mul(a, b) => g(a) * g(b),
                Op::Div(a, b) => g(a) / g(b),
                Op::Neg(a) => -g(a),
                Op::PowInt(a, k) => g(a).powi(k),
                Op::PowConst(a, c) => g(a).powf(c),
                Op::Pow(a, b) => g(a).powd(g(b)),
                Op::Unary(f, a) => unary(f, g(a)),
                Op::Binary(f, a, b) => binary(f, g(a), g(b)),
            };
            r[out] = v;
            out += 1;
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
        Function::Tanh => a.tanh(),
        Function::Atan2 | Function::Min | Function::Max => unreachable!("binary functions"),
    }
}

#[inline]
fn binary<S: Scalar>(f: Function, a: S, b: S) -> S {
    match f {
        Function::Atan2 => a.atan2(b),
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
