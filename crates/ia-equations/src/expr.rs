//! Expressions: their syntax tree, the parser and the re-printer.
//!
//! Grammar (precedence from loosest to tightest; `^` is right-associative
//! and binds tighter than unary minus, so `-x^2` is `-(x^2)`):
//!
//! ```text
//! sum     := product (("+" | "-") product)*
//! product := unary (("*" | "/") unary)*
//! unary   := "-" unary | power
//! power   := atom ("^" unary)?
//! atom    := number | name | name "(" sum ("," sum)* ")" | "(" sum ")"
//! number  := digits ["." digits] [("e" | "E") ["+" | "-"] digits]   (or "." digits ...)
//! name    := (letter | "_") (letter | digit | "_")*
//! ```
//!
//! `**` (another language's power) is an error naming `^`.

use std::fmt;

/// A name an expression reads: time, a state entry, a parameter or a `let`
/// intermediate, by index in its declaration list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Name {
    /// The time `t`.
    Time,
    /// State entry `i`.
    State(usize),
    /// Parameter `i`.
    Param(usize),
    /// `let` intermediate `i`.
    Let(usize),
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
    /// `a ^ b`.
    Pow,
}

/// A function of the expression language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Function {
    /// `sin(a)`.
    Sin,
    /// `cos(a)`.
    Cos,
    /// `tan(a)`.
    Tan,
    /// `exp(a)`.
    Exp,
    /// `log(a)`, the natural logarithm.
    Log,
    /// `sqrt(a)`.
    Sqrt,
    /// `abs(a)`.
    Abs,
    /// `tanh(a)`.
    Tanh,
    /// `atan2(y, x)`.
    Atan2,
    /// `min(a, b)`.
    Min,
    /// `max(a, b)`.
    Max,
}

impl Function {
    /// Every function, in the order error messages list them.
    pub const ALL: [Function; 11] = [
        Function::Sin,
        Function::Cos,
        Function::Tan,
        Function::Exp,
        Function::Log,
        Function::Sqrt,
        Function::Abs,
        Function::Tanh,
        Function::Atan2,
        Function::Min,
        Function::Max,
    ];

    /// The name as written in expressions.
    pub fn name(self) -> &'static str {
        match self {
            Function::Sin => "sin",
            Function::Cos => "cos",
            Function::Tan => "tan",
            Function::Exp => "exp",
            Function::Log => "log",
            Function::Sqrt => "sqrt",
            Function::Abs => "abs",
            Function::Tanh => "tanh",
            Function::Atan2 => "atan2",
            Function::Min => "min",
            Function::Max => "max",
        }
    }

    /// The number of arguments it takes.
    pub fn arity(self) -> usize {
        match self {
            Function::Atan2 | Function::Min | Function::Max => 2,
            _ => 1,
        }
    }

    /// The function named `name`, if any.
    pub fn by_name(name: &str) -> Option<Function> {
        Function::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// An expression tree with its names resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A literal (never negative: a minus sign is [`Expr::Neg`]).
    Number(f64),
    /// A name.
    Name(Name),
    /// `-a`.
    Neg(Box<Expr>),
    /// `a op b`.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `f(a)` or `f(a, b)`.
    Call(Function, Vec<Expr>),
}

/// A failure to parse an expression: the 1-based column (in characters) and
/// what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based column, in characters, of the offending token.
    pub column: usize,
    /// What is wrong, in one sentence without a trailing period.
    pub message: String,
}

/// How names are looked up while parsing: the names in order (for messages)
/// and their meaning.
pub trait Scope {
    /// The meaning of `name`, if it is one.
    fn resolve(&self, name: &str) -> Option<Name>;
    /// Every valid name, in the order messages list them.
    fn names(&self) -> Vec<String>;
}

/// Parses `text` into an expression, resolving names through `scope`.
pub fn parse(text: &str, scope: &dyn Scope) -> Result<Expr, SyntaxError> {
    let mut parser = Parser {
        chars: text.chars().collect(),
        pos: 0,
        scope,
        depth: 0,
        operations: 0,
    };
    parser.skip_space();
    if parser.pos == parser.chars.len() {
        return Err(SyntaxError {
            column: 1,
            message: "empty expression".to_string(),
        });
    }
    let expr = parser.sum()?;
    parser.skip_space();
    if parser.pos < parser.chars.len() {
        return Err(parser.unexpected("an operator (+ - * / ^) or the end"));
    }
    Ok(expr)
}

/// Deepest nesting of parentheses and unary minus accepted, so that hostile
/// input cannot overflow the parser's stack.
pub const MAX_DEPTH: usize = 200;

/// Most binary operations in one expression: with [`MAX_DEPTH`] it bounds
/// the depth of the tree, which the compiler and printer walk recursively.
pub const MAX_OPERATIONS: usize = 2000;

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    scope: &'a dyn Scope,
    depth: usize,
    operations: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.pos < self.chars.len() && self.chars[self.pos].is_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.chars.get(self.pos).copied()
    }

    fn error(&self, column: usize, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            column,
            message: message.into(),
        }
    }

    fn unexpected(&self, expected: &str) -> SyntaxError {
        let found = match self.chars.get(self.pos) {
            None => "the end".to_string(),
            Some(c) => format!("\"{c}\""),
        };
        self.error(self.pos + 1, format!("expected {expected}, found {found}"))
    }

    fn enter(&mut self) -> Result<(), SyntaxError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.error(
                self.pos + 1,
                format!("expression nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn count_operation(&mut self) -> Result<(), SyntaxError> {
        self.operations += 1;
        if self.operations > MAX_OPERATIONS {
            return Err(self.error(
                self.pos,
                format!("expression has more than {MAX_OPERATIONS} operations; split it with let"),
            ));
        }
        Ok(())
    }

    fn sum(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.product()?;
        while let Some(c @ ('+' | '-')) = self.peek() {
            self.pos += 1;
            self.count_operation()?;
            let right = self.product()?;
            let op = if c == '+' {
                BinaryOp::Add
            } else {
                BinaryOp::Sub
            };
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn product(&mut self) -> Result<Expr, SyntaxError> {
        let mut left = self.unary()?;
        while let Some(c @ ('*' | '/')) = self.peek() {
            if c == '*' && self.chars.get(self.pos + 1) == Some(&'*') {
                return Err(self.error(
                    self.pos + 1,
                    "\"**\" is not an operator; write a power with \"^\", like x^2",
                ));
            }
            self.pos += 1;
            self.count_operation()?;
            let right = self.unary()?;
            let op = if c == '*' {
                BinaryOp::Mul
            } else {
                BinaryOp::Div
            };
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, SyntaxError> {
        if self.peek() == Some('-') {
            self.pos += 1;
            self.enter()?;
            let inner = self.unary()?;
            self.depth -= 1;
            return Ok(Expr::Neg(Box::new(inner)));
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr, SyntaxError> {
        let base = self.atom()?;
        if self.peek() == Some('^') {
            self.pos += 1;
            self.enter()?;
            let exponent = self.unary()?;
            self.depth -= 1;
            return Ok(Expr::Binary(
                BinaryOp::Pow,
                Box::new(base),
                Box::new(exponent),
            ));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<Expr, SyntaxError> {
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                self.enter()?;
                let inner = self.sum()?;
                self.depth -= 1;
                if self.peek() != Some(')') {
                    return Err(self.unexpected("\")\""));
                }
                self.pos += 1;
                Ok(inner)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_alphabetic() || c == '_' => self.name(),
            _ => Err(self.unexpected("a number, a name or \"(\"")),
        }
    }

    fn number(&mut self) -> Result<Expr, SyntaxError> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while p.pos < p.chars.len() && p.chars[p.pos].is_ascii_digit() {
                p.pos += 1;
            }
            p.pos > from
        };
        let mut any = digits(self);
        if self.chars.get(self.pos) == Some(&'.') {
            self.pos += 1;
            any |= digits(self);
        }
        if !any {
            return Err(self.error(start + 1, "a number needs a digit"));
        }
        if let Some('e' | 'E') = self.chars.get(self.pos) {
            let mark = self.pos;
            self.pos += 1;
            if let Some('+' | '-') = self.chars.get(self.pos) {
                self.pos += 1;
            }
            if !digits(self) {
                return Err(self.error(mark + 1, "an exponent needs digits after \"e\""));
            }
        }
        if let Some(&c) = self.chars.get(self.pos) {
            if c.is_alphabetic() || c == '_' || c == '.' {
                return Err(self.error(
                    self.pos + 1,
                    format!("unexpected \"{c}\" after a number; write \"*\" for a product"),
                ));
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        let value: f64 = text
            .parse()
            .map_err(|_| self.error(start + 1, format!("\"{text}\" is not a number")))?;
        if !value.is_finite() {
            return Err(self.error(start + 1, format!("the number {text} overflows")));
        }
        Ok(Expr::Number(value))
    }

    fn name(&mut self) -> Result<Expr, SyntaxError> {
        let start = self.pos;
        while self.pos < self.chars.len()
            && (self.chars[self.pos].is_alphanumeric() || self.chars[self.pos] == '_')
        {
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos].iter().collect();
        let column = start + 1;
        if self.peek() == Some('(') {
            let Some(function) = Function::by_name(&name) else {
                let message = if self.scope.resolve(&name).is_some() {
                    format!("\"{name}\" is not a function; write \"*\" for a product")
                } else {
                    let functions: Vec<String> =
                        Function::ALL.iter().map(|f| f.name().to_string()).collect();
                    unknown("function", &name, &functions)
                };
                return Err(self.error(column, message));
            };
            self.pos += 1;
            self.enter()?;
            let mut args = vec![self.sum()?];
            while self.peek() == Some(',') {
                self.pos += 1;
                args.push(self.sum()?);
            }
            self.depth -= 1;
            if self.peek() != Some(')') {
                return Err(self.unexpected("\",\" or \")\""));
            }
            self.pos += 1;
            if args.len() != function.arity() {
                let plural = if function.arity() == 1 { "" } else { "s" };
                return Err(self.error(
                    column,
                    format!(
                        "{name} takes {} argument{plural}, got {}",
                        function.arity(),
                        args.len()
                    ),
                ));
            }
            return Ok(Expr::Call(function, args));
        }
        match self.scope.resolve(&name) {
            Some(n) => Ok(Expr::Name(n)),
            None if Function::by_name(&name).is_some() => Err(self.error(
                column,
                format!("function {name} needs its argument in parentheses: {name}(...)"),
            )),
            None => Err(self.error(column, unknown("name", &name, &self.scope.names()))),
        }
    }
}

/// `unknown <kind> "<name>"; <kind>s are a, b, c; closest is "b"` (the
/// closest part only when one is within a few edits).
pub fn unknown(kind: &str, name: &str, valid: &[String]) -> String {
    let mut message = format!(
        "unknown {kind} \"{name}\"; {kind}s are {}",
        valid.join(", ")
    );
    if valid.is_empty() {
        message = format!("unknown {kind} \"{name}\"; there are no {kind}s");
    }
    if let Some(best) = closest(name, valid) {
        message.push_str(&format!("; closest is \"{best}\""));
    }
    message
}

/// The valid name nearest to `name` by edit distance, if it is within half
/// the length of `name` (rounded up) edits or starts with `name` (a name cut
/// short).
pub fn closest<'a>(name: &str, valid: &'a [String]) -> Option<&'a str> {
    let limit = name.chars().count().div_ceil(2).max(1);
    valid
        .iter()
        .map(|v| (edit_distance(name, v), v))
        .filter(|(d, v)| *d <= limit || (name.len() >= 2 && v.starts_with(name)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, v)| v.as_str())
}

/// Levenshtein distance, in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (diagonal + usize::from(ca != cb))
                .min(row[j] + 1)
                .min(above + 1);
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Binding strength used by the printer: an operand is parenthesised when
/// its own precedence is below what its position needs.
fn precedence(e: &Expr) -> u8 {
    match e {
        Expr::Binary(BinaryOp::Add | BinaryOp::Sub, ..) => 1,
        Expr::Binary(BinaryOp::Mul | BinaryOp::Div, ..) => 2,
        Expr::Neg(_) => 3,
        Expr::Binary(BinaryOp::Pow, ..) => 4,
        Expr::Number(_) | Expr::Name(_) | Expr::Call(..) => 5,
    }
}

/// An expression printed back with the names of its model, with the fewest
/// parentheses that parse back to the same tree.
pub struct Printed<'a, 'n> {
    /// The expression.
    pub expr: &'a Expr,
    /// The name of each [`Name`].
    pub names: &'n dyn Fn(Name) -> &'n str,
}

impl<'a> Printed<'a, '_> {
    fn operand(&self, e: &'a Expr, needed: u8, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = Printed {
            expr: e,
            names: self.names,
        };
        if precedence(e) < needed {
            write!(f, "({inner})")
        } else {
            write!(f, "{inner}")
        }
    }
}

impl fmt::Display for Printed<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.expr {
            Expr::Number(v) => write!(f, "{v}"),
            Expr::Name(n) => f.write_str((self.names)(*n)),
            Expr::Neg(a) => {
                f.write_str("-")?;
                self.operand(a, 3, f)
            }
            Expr::Binary(op, a, b) => {
                let (symbol, left, right) = match op {
                    BinaryOp::Add => (" + ", 1, 2),
                    BinaryOp::Sub => (" - ", 1, 2),
                    BinaryOp::Mul => (" * ", 2, 3),
                    BinaryOp::Div => (" / ", 2, 3),
                    BinaryOp::Pow => ("^", 5, 3),
                };
                self.operand(a, left, f)?;
                f.write_str(symbol)?;
                self.operand(b, right, f)
            }
            Expr::Call(function, args) => {
                write!(f, "{}(", function.name())?;
                for (k, a) in args.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    self.operand(a, 0, f)?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Every name an expression reads, in order of appearance, with repeats.
pub fn visit_names(e: &Expr, out: &mut impl FnMut(Name)) {
    match e {
        Expr::Number(_) => {}
        Expr::Name(n) => out(*n),
        Expr::Neg(a) => visit_names(a, out),
        Expr::Binary(_, a, b) => {
            visit_names(a, out);
            visit_names(b, out);
        }
        Expr::Call(_, args) => args.iter().for_each(|a| visit_names(a, out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    struct Ball;
    impl Scope for Ball {
        fn resolve(&self, name: &str) -> Option<Name> {
            match name {
                "y" => Some(Name::State(0)),
                "vy" => Some(Name::State(1)),
                "g" => Some(Name::Param(0)),
                "e" => Some(Name::Param(1)),
                "t" => Some(Name::Time),
                _ => None,
            }
        }
        fn names(&self) -> Vec<String> {
            ["y", "vy", "g", "e", "t"].map(String::from).to_vec()
        }
    }

    fn names(n: Name) -> &'static str {
        match n {
            Name::State(0) => "y",
            Name::State(_) => "vy",
            Name::Param(0) => "g",
            Name::Param(_) => "e",
            Name::Time => "t",
            Name::Let(_) => "l",
        }
    }

    fn reprint(text: &str) -> String {
        let e = parse(text, &Ball).unwrap();
        Printed {
            expr: &e,
            names: &names,
        }
        .to_string()
    }

    #[rstest]
    #[case("-e*vy", "-e * vy")]
    #[case("-y^2", "-y^2")]
    #[case("(-y)^2", "(-y)^2")]
    #[case("y^vy^2", "y^vy^2")]
    #[case("(y^vy)^2", "(y^vy)^2")]
    #[case("y - (vy - g)", "y - (vy - g)")]
    #[case("(y - vy) - g", "y - vy - g")]
    #[case("y / (vy * g)", "y / (vy * g)")]
    #[case("2^-1", "2^-1")]
    #[case("atan2( y ,vy)+max(1.5e3, .5)", "atan2(y, vy) + max(1500, 0.5)")]
    #[case("--y", "--y")]
    #[case("-(y + vy)", "-(y + vy)")]
    fn reprints_with_the_fewest_parentheses(#[case] text: &str, #[case] expected: &str) {
        assert_eq!(reprint(text), expected);
        // The re-printed form parses back to the same tree.
        assert_eq!(parse(expected, &Ball).unwrap(), parse(text, &Ball).unwrap());
    }

    #[rstest]
    #[case(
        "-e * ee",
        6,
        "unknown name \"ee\"; names are y, vy, g, e, t; closest is \"e\""
    )]
    #[case("y +", 4, "expected a number, a name or \"(\", found the end")]
    #[case("y * * 2", 5, "expected a number, a name or \"(\", found \"*\"")]
    #[case(
        "y**2",
        2,
        "\"**\" is not an operator; write a power with \"^\", like x^2"
    )]
    #[case(
        "(y + 1) ** vy",
        9,
        "\"**\" is not an operator; write a power with \"^\", like x^2"
    )]
    #[case("(y", 3, "expected \")\", found the end")]
    #[case("y)", 2, "expected an operator (+ - * / ^) or the end, found \")\"")]
    #[case("atan2(y)", 1, "atan2 takes 2 arguments, got 1")]
    #[case("sin(y, vy)", 1, "sin takes 1 argument, got 2")]
    #[case("sine(y)", 1, "unknown function \"sine\"; functions are sin, cos, tan, exp, log, sqrt, abs, tanh, atan2, min, max; closest is \"sin\"")]
    #[case("g(y)", 1, "\"g\" is not a function; write \"*\" for a product")]
    #[case("2y", 2, "unexpected \"y\" after a number; write \"*\" for a product")]
    #[case("1e", 2, "an exponent needs digits after \"e\"")]
    #[case("  ", 1, "empty expression")]
    #[case(
        "sqrt y",
        1,
        "function sqrt needs its argument in parentheses: sqrt(...)"
    )]
    #[case("y # 2", 3, "expected an operator (+ - * / ^) or the end, found \"#\"")]
    fn syntax_errors_name_the_column(
        #[case] text: &str,
        #[case] column: usize,
        #[case] message: &str,
    ) {
        let err = parse(text, &Ball).unwrap_err();
        assert_eq!((err.column, err.message.as_str()), (column, message));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let text = "(".repeat(10_000) + "y" + &")".repeat(10_000);
        let err = parse(&text, &Ball).unwrap_err();
        assert!(err.message.contains("nested deeper"), "{}", err.message);
        let text = "-".repeat(10_000) + "y";
        assert!(parse(&text, &Ball).is_err());
    }

    #[test]
    fn closest_name_within_a_few_edits() {
        let valid = ["speed", "vy", "y"].map(String::from);
        assert_eq!(closest("sped", &valid), Some("speed"));
        assert_eq!(closest("zzzzzz", &valid), None);
    }
}
