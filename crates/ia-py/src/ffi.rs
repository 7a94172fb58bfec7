//! The XLA FFI handlers behind jitted `impact_adjoint.jax` code: the two
//! calls of [`crate::jax::SolverCore`] as XLA custom calls on the CPU, so
//! that a jitted `jax.grad` costs two foreign calls from XLA's own thread
//! instead of two trips into Python (`jax.pure_callback`).
//!
//! * [`OUTPUTS_TARGET`]: arguments `x0 (..., n)`, `params (..., n_params)`;
//!   results final states `(..., n)`, event times `(..., K)`, event counts
//!   `(...)` (int64), observed states `(..., n_obs, n)`; `K` counts every
//!   time output, the first event times and then the first firing times of
//!   named transitions (`crate::times`);
//! * [`GRADIENT_TARGET`]: arguments `x0`, `params` and the cotangents
//!   `(..., n)`, `(..., K)`, `(..., n_obs, n)`; results the gradients
//!   `(..., n)` and `(..., n_params)`.
//!
//! Each call takes one more, last argument where the final time is given
//! per run (a traced `t_end`): `t_end (...)`, on the batch axes of `x0`;
//! the outputs call then may have one more, last result, `d x(T) / dT`
//! `(..., n)` (the flow at each final state).
//!
//! The leading axes `...` are a batch (`jax.vmap` with
//! `vmap_method="broadcast_all"`: every buffer carries the same ones). Both
//! take the scalar attribute `solver` (uint64), the id of a living
//! `JaxSolver` ([`crate::jax::registered`]).
//!
//! The handlers speak the XLA FFI C API (`xla/ffi/api/c_api.h`, shipped in
//! jaxlib's `jax.ffi.include_dir()`) directly: the structs below mirror
//! those of API version [`API_MAJOR`].[`API_MINOR`] (jaxlib 0.10), field for
//! field. Every struct XLA hands over carries its size, checked before a
//! field past the common prefix is read, so that a jaxlib whose structs
//! differ gets an error naming the struct instead of a misread. Anything
//! wrong with the inputs (a dtype, a shape, an unknown solver, an error of
//! the run) is returned as an `XLA_FFI_Error` with the library's message,
//! which JAX raises as its runtime error; a panic is caught and returned
//! the same way, never unwound into XLA.

use crate::jax::{registered, CotangentsIn, OutputsOut, Sizes, SolverCore};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use std::borrow::Cow;
use std::ffi::{c_char, c_void, CString};
use std::mem::{offset_of, size_of};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

/// The custom-call target of [`SolverCore::outputs`].
pub const OUTPUTS_TARGET: &str = "impact_adjoint_jax_outputs";
/// The custom-call target of [`SolverCore::cotangent_gradient`].
pub const GRADIENT_TARGET: &str = "impact_adjoint_jax_gradient";
/// The custom-call target of [`SolverCore::tangents`].
pub const TANGENT_TARGET: &str = "impact_adjoint_jax_tangent";
/// The major version of the XLA FFI C API these handlers are written
/// against (reported to XLA when it registers them).
pub const API_MAJOR: i32 = 0;
/// The minor version of that API.
pub const API_MINOR: i32 = 3;

// --- Mirrors of xla/ffi/api/c_api.h (C enums are `int`: read as i32, so
// that a value this file does not know is a number, not undefined
// behaviour). ---

/// `XLA_FFI_Extension_Metadata`.
const EXTENSION_METADATA: i32 = 1;
/// `XLA_FFI_ExecutionStage_EXECUTE`.
const STAGE_EXECUTE: i32 = 3;
/// `XLA_FFI_ArgType_BUFFER` and `XLA_FFI_RetType_BUFFER`.
const BUFFER: i32 = 1;
/// `XLA_FFI_AttrType_SCALAR`.
const ATTR_SCALAR: i32 = 3;
/// `XLA_FFI_DataType_S32`.
const DTYPE_S32: i32 = 4;
/// `XLA_FFI_DataType_S64`.
const DTYPE_S64: i32 = 5;
/// `XLA_FFI_DataType_U64`.
const DTYPE_U64: i32 = 9;
/// `XLA_FFI_DataType_F32` (JAX's type without 64-bit mode: read into
/// float64, computed in float64, written back rounded).
const DTYPE_F32: i32 = 11;
/// `XLA_FFI_DataType_F64`.
const DTYPE_F64: i32 = 12;
/// `XLA_FFI_Error_Code_INVALID_ARGUMENT`.
const ERROR_INVALID_ARGUMENT: i32 = 3;
/// `XLA_FFI_Error_Code_INTERNAL`.
const ERROR_INTERNAL: i32 = 13;

#[repr(C)]
struct ExtensionBase {
    struct_size: usize,
    kind: i32,
    next: *mut ExtensionBase,
}

#[repr(C)]
struct ApiVersion {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    major_version: i32,
    minor_version: i32,
}

/// Opaque `XLA_FFI_Error` (owned by XLA once returned).
#[repr(C)]
pub struct XlaError {
    _private: [u8; 0],
}

#[repr(C)]
struct ErrorCreateArgs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    message: *const c_char,
    errc: i32,
}

type ErrorCreate = unsafe extern "C" fn(*mut ErrorCreateArgs) -> *mut XlaError;

/// The head of `XLA_FFI_Api`, up to the one function used.
#[repr(C)]
struct Api {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api_version: ApiVersion,
    internal_api: *const c_void,
    error_create: Option<ErrorCreate>,
}

#[repr(C)]
struct Buffer {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    dtype: i32,
    data: *mut c_void,
    rank: i64,
    dims: *const i64,
}

/// `XLA_FFI_Args` and `XLA_FFI_Rets` (the same layout).
#[repr(C)]
struct List {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *const i32,
    items: *const *mut c_void,
}

#[repr(C)]
struct ByteSpan {
    ptr: *const c_char,
    len: usize,
}

#[repr(C)]
struct Scalar {
    dtype: i32,
    value: *const c_void,
}

#[repr(C)]
struct Attrs {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    size: i64,
    types: *const i32,
    names: *const *const ByteSpan,
    attrs: *const *const c_void,
}

/// `XLA_FFI_CallFrame`.
#[repr(C)]
pub struct CallFrame {
    struct_size: usize,
    extension_start: *mut ExtensionBase,
    api: *const Api,
    ctx: *mut c_void,
    stage: i32,
    args: List,
    rets: List,
    attrs: Attrs,
    future: *mut c_void,
}

#[repr(C)]
struct Metadata {
    struct_size: usize,
    api_version: ApiVersion,
    traits: u32,
}

#[repr(C)]
struct MetadataExtension {
    extension_base: ExtensionBase,
    metadata: *mut Metadata,
}

/// The sizes XLA's `XLA_FFI_DEFINE_STRUCT_TRAITS` gives (through the last
/// field, without trailing padding): what a caller's `struct_size` must
/// reach for the fields read here to be there.
const CALL_FRAME_SIZE: usize = offset_of!(CallFrame, attrs) + size_of::<Attrs>();
const LIST_SIZE: usize = size_of::<List>();
const ATTRS_SIZE: usize = size_of::<Attrs>();
const BUFFER_SIZE: usize = size_of::<Buffer>();
const API_SIZE: usize = offset_of!(Api, error_create) + size_of::<Option<ErrorCreate>>();
const ERROR_CREATE_ARGS_SIZE: usize = offset_of!(ErrorCreateArgs, errc) + size_of::<i32>();
const API_VERSION_SIZE: usize = size_of::<ApiVersion>();
const METADATA_SIZE: usize = offset_of!(Metadata, traits) + size_of::<u32>();
const METADATA_EXTENSION_SIZE: usize = size_of::<MetadataExtension>();

/// The handler of [`OUTPUTS_TARGET`] (`XLA_FFI_Handler`).
pub extern "C" fn outputs_handler(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: XLA calls a registered handler with a valid call frame (or a
    // metadata query frame); `handle` checks every size before reading.
    unsafe { handle(frame, run_outputs) }
}

/// The handler of [`GRADIENT_TARGET`] (`XLA_FFI_Handler`).
pub extern "C" fn gradient_handler(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: as in `outputs_handler`.
    unsafe { handle(frame, run_gradient) }
}

/// The handler of [`TANGENT_TARGET`] (`XLA_FFI_Handler`).
pub extern "C" fn tangent_handler(frame: *mut CallFrame) -> *mut XlaError {
    // SAFETY: as in `outputs_handler`.
    unsafe { handle(frame, tangents::run_tangents) }
}

/// The handlers as `{"outputs": (target name, PyCapsule), "gradient": ...,
/// "tangent": ...}`,
/// for `jax.ffi.register_ffi_target(name, capsule, platform="cpu")` (API
/// version 1 of that call: the typed FFI) and `jax.ffi.ffi_call(name, ...)`.
#[pyfunction]
pub fn ffi_targets(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let targets = PyDict::new(py);
    type Handler = extern "C" fn(*mut CallFrame) -> *mut XlaError;
    let handlers: [(&str, &str, Handler); 3] = [
        ("outputs", OUTPUTS_TARGET, outputs_handler),
        ("gradient", GRADIENT_TARGET, gradient_handler),
        ("tangent", TANGENT_TARGET, tangent_handler),
    ];
    for (role, name, handler) in handlers {
        let pointer = NonNull::new(handler as *mut c_void).expect("a function's address");
        // SAFETY: a function pointer of this library, which stays loaded
        // as long as the interpreter (extension modules are never unloaded).
        let capsule =
            unsafe { PyCapsule::new_with_pointer(py, pointer, c"xla._CUSTOM_CALL_TARGET") }?;
        targets.set_item(role, (name, capsule))?;
    }
    Ok(targets)
}

/// `(major, minor)`: the XLA FFI C API version the handlers follow.
#[pyfunction]
pub fn ffi_api_version() -> (i32, i32) {
    (API_MAJOR, API_MINOR)
}

/// An error to hand back to XLA: its code and message.
#[derive(Debug)]
struct Failure {
    code: i32,
    message: String,
}

impl Failure {
    fn invalid(message: String) -> Self {
        Failure {
            code: ERROR_INVALID_ARGUMENT,
            message,
        }
    }
}

/// The common part of both handlers: the checks of the frame, the metadata
/// query, the stages, and the conversion of a failure or a panic into an
/// `XLA_FFI_Error`.
///
/// # Safety
/// `frame` points to a call frame as XLA passes it (null aborts).
unsafe fn handle(
    frame: *mut CallFrame,
    run: fn(&CallFrame) -> Result<(), Failure>,
) -> *mut XlaError {
    // SAFETY: the caller's contract.
    let Some(frame) = (unsafe { frame.as_ref() }) else {
        unreportable("no call frame")
    };
    // The metadata query (XLA makes it when the handler is registered) is
    // answered first: XLA's query frame has no API table. `struct_size`,
    // `extension_start` and `api` open every version of the frame.
    // SAFETY: a non-null extension starts with an `ExtensionBase`.
    if let Some(extension) =
        unsafe { frame.extension_start.as_ref() }.filter(|e| e.kind == EXTENSION_METADATA)
    {
        // SAFETY: an extension of kind metadata is a `MetadataExtension`
        // (its size is checked inside).
        let answer =
            unsafe { metadata(extension as *const ExtensionBase as *mut MetadataExtension) };
        return match (answer, unsafe { frame.api.as_ref() }) {
            (Ok(()), _) => std::ptr::null_mut(),
            // SAFETY: `api` is the frame's API table.
            (Err(failure), Some(api)) => unsafe { create_error(api, failure) },
            // No table to make an error with: the version left unwritten
            // (XLA fills 0.0) makes XLA refuse the registration, naming its
            // own version and that one; the message says why.
            (Err(failure), None) => {
                eprintln!("{}", failure.message);
                std::ptr::null_mut()
            }
        };
    }
    // SAFETY: every frame but the metadata query carries XLA's API table.
    let Some(api) = (unsafe { frame.api.as_ref() }) else {
        unreportable("a call frame without an API table")
    };
    let version = &api.api_version;
    let result = if frame.struct_size < CALL_FRAME_SIZE {
        Err(Failure::invalid(format!(
            "impact_adjoint.jax: XLA_FFI_CallFrame of {} bytes, expected at least {CALL_FRAME_SIZE}: the installed jaxlib speaks an XLA FFI API other than {API_MAJOR}.{API_MINOR}",
            frame.struct_size
        )))
    } else if api.struct_size < API_SIZE || version.major_version != API_MAJOR {
        // A new major version may move any field: read nothing more.
        Err(Failure::invalid(format!(
            "impact_adjoint.jax: the installed jaxlib speaks the XLA FFI C API {}.{}, these handlers {API_MAJOR}.{API_MINOR} (install a jax whose jaxlib has FFI API {API_MAJOR}.x)",
            version.major_version, version.minor_version
        )))
    } else if frame.stage != STAGE_EXECUTE {
        // Nothing to instantiate, prepare or initialise: all the work is
        // the run, at execution.
        Ok(())
    } else {
        catch_unwind(AssertUnwindSafe(|| run(frame))).unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Failure {
                code: ERROR_INTERNAL,
                message: format!("impact_adjoint.jax: internal error (a panic): {what}"),
            })
        })
    };
    match result {
        Ok(()) => std::ptr::null_mut(),
        // SAFETY: `api` is the frame's API table.
        Err(failure) => unsafe { create_error(api, failure) },
    }
}

/// Stops the process on a call XLA's FFI never makes (`XLA_FFI_Error_Create`
/// has opened the API table since its first version): with no way to
/// return an error, returning success would hand back unwritten results.
fn unreportable(what: &str) -> ! {
    eprintln!("impact_adjoint.jax: the XLA FFI handler got {what}; this jaxlib does not speak the XLA FFI C API {API_MAJOR}.{API_MINOR}");
    std::process::abort()
}

/// `failure` as an `XLA_FFI_Error` made by XLA's own `XLA_FFI_Error_Create`
/// (which copies the message).
///
/// # Safety
/// `api` is the API table of a call frame.
unsafe fn create_error(api: &Api, failure: Failure) -> *mut XlaError {
    let create = if api.struct_size >= API_SIZE {
        api.error_create
    } else {
        None
    };
    let Some(create) = create else {
        unreportable("an API table without XLA_FFI_Error_Create")
    };
    let message = CString::new(failure.message.replace('\0', " "))
        .unwrap_or_else(|_| CString::from(c"impact_adjoint.jax: error"));
    let mut args = ErrorCreateArgs {
        struct_size: ERROR_CREATE_ARGS_SIZE,
        extension_start: std::ptr::null_mut(),
        message: message.as_ptr(),
        errc: failure.code,
    };
    // SAFETY: XLA's function, called as its header says; `message` lives
    // across the call.
    unsafe { create(&mut args) }
}

/// Answers XLA's metadata query (made when the handler is registered): the
/// API version these mirrors follow, no traits.
///
/// # Safety
/// `extension` points to an extension of kind metadata.
unsafe fn metadata(extension: *mut MetadataExtension) -> Result<(), Failure> {
    // SAFETY: the caller's contract; the base is read first for the size.
    let base_size = unsafe { (*extension).extension_base.struct_size };
    if base_size < METADATA_EXTENSION_SIZE {
        return Err(Failure::invalid(format!(
            "impact_adjoint.jax: XLA_FFI_Metadata_Extension of {base_size} bytes, expected at least {METADATA_EXTENSION_SIZE}: the installed jaxlib speaks an XLA FFI API other than {API_MAJOR}.{API_MINOR}"
        )));
    }
    // SAFETY: the extension is large enough to hold the pointer.
    let Some(metadata) = (unsafe { (*extension).metadata.as_mut() }) else {
        return Err(Failure::invalid(
            "impact_adjoint.jax: XLA's metadata query has no XLA_FFI_Metadata".into(),
        ));
    };
    if metadata.struct_size < METADATA_SIZE {
        return Err(Failure::invalid(format!(
            "impact_adjoint.jax: XLA_FFI_Metadata of {} bytes, expected at least {METADATA_SIZE}: the installed jaxlib speaks an XLA FFI API other than {API_MAJOR}.{API_MINOR}",
            metadata.struct_size
        )));
    }
    metadata.api_version = ApiVersion {
        struct_size: API_VERSION_SIZE,
        extension_start: std::ptr::null_mut(),
        major_version: API_MAJOR,
        minor_version: API_MINOR,
    };
    metadata.traits = 0;
    Ok(())
}

/// The uint64 scalar attribute `name` of the frame, if it has one.
fn u64_attribute(frame: &CallFrame, name: &str) -> Result<Option<u64>, Failure> {
    let attrs = &frame.attrs;
    if attrs.struct_size < ATTRS_SIZE {
        return Err(Failure::invalid(format!(
            "impact_adjoint.jax: XLA_FFI_Attrs of {} bytes, expected at least {ATTRS_SIZE}",
            attrs.struct_size
        )));
    }
    let count = usize::try_from(attrs.size).unwrap_or(0);
    for i in 0..count {
        // SAFETY: XLA's attribute arrays hold `size` entries each.
        let (kind, span, value) = unsafe {
            (
                *attrs.types.add(i),
                &**attrs.names.add(i),
                *attrs.attrs.add(i),
            )
        };
        // SAFETY: a byte span of the attribute's name, `len` bytes.
        let found = unsafe { std::slice::from_raw_parts(span.ptr.cast::<u8>(), span.len) };
        if found != name.as_bytes() {
            continue;
        }
        // SAFETY: a scalar attribute's value is an `XLA_FFI_Scalar`.
        let scalar = (kind == ATTR_SCALAR).then(|| unsafe { &*value.cast::<Scalar>() });
        let Some(scalar) = scalar.filter(|s| s.dtype == DTYPE_U64) else {
            let what = if name == "solver" {
                "a JaxSolver's ffi_id"
            } else {
                "1 or 0"
            };
            return Err(Failure::invalid(format!(
                "impact_adjoint.jax: the attribute '{name}' must be a uint64 scalar ({what})"
            )));
        };
        // SAFETY: a U64 scalar points to one u64.
        return Ok(Some(unsafe { *scalar.value.cast::<u64>() }));
    }
    Ok(None)
}

/// The solver named by the frame's attribute `solver`.
fn solver(frame: &CallFrame) -> Result<std::sync::Arc<SolverCore>, Failure> {
    let Some(id) = u64_attribute(frame, "solver")? else {
        return Err(Failure::invalid(
            "impact_adjoint.jax: the custom call has no attribute 'solver' (the id of a JaxSolver)"
                .into(),
        ));
    };
    registered(id).ok_or_else(|| {
        Failure::invalid(format!(
            "impact_adjoint.jax: no solver with id {id}: the impact_adjoint.jax.solver it came from has been freed (keep the function returned by solver() alive while code calling it runs)"
        ))
    })
}

/// An argument or result buffer, its dtype and shape checked.
struct View<'a> {
    data: *mut c_void,
    dims: &'a [i64],
}

/// The `index`th buffer of `list` (arguments or results), named `what`.
fn buffer<'a>(list: &'a List, index: usize, what: &str) -> Result<(&'a Buffer, View<'a>), Failure> {
    // SAFETY: `list` is the frame's; its arrays hold `size` entries, and
    // the caller checked the count before asking.
    let (kind, item) = unsafe { (*list.types.add(index), *list.items.add(index)) };
    // SAFETY: a buffer entry points to an `XLA_FFI_Buffer`.
    let buffer = (kind == BUFFER)
        .then(|| unsafe { item.cast::<Buffer>().as_ref() })
        .flatten()
        .ok_or_else(|| Failure::invalid(format!("impact_adjoint.jax: {what} is not a buffer")))?;
    if buffer.struct_size < BUFFER_SIZE {
        return Err(Failure::invalid(format!(
            "impact_adjoint.jax: XLA_FFI_Buffer of {} bytes, expected at least {BUFFER_SIZE}",
            buffer.struct_size
        )));
    }
    let rank = usize::try_from(buffer.rank).unwrap_or(0);
    let dims = if rank == 0 {
        &[][..]
    } else {
        // SAFETY: `dims` holds `rank` entries.
        unsafe { std::slice::from_raw_parts(buffer.dims, rank) }
    };
    Ok((
        buffer,
        View {
            data: buffer.data,
            dims,
        },
    ))
}

/// An XLA element type by name, for messages.
fn type_name(dtype: i32) -> String {
    match dtype {
        DTYPE_F64 => "float64".to_string(),
        DTYPE_F32 => "float32".to_string(),
        DTYPE_S64 => "int64".to_string(),
        DTYPE_S32 => "int32".to_string(),
        other => format!("XLA type {other}"),
    }
}

/// The float type of a call: that of the initial state, float64 or
/// float32; every other float buffer of the call must have it.
fn float_type(what: &str, buffer: &Buffer) -> Result<i32, Failure> {
    match buffer.dtype {
        DTYPE_F64 | DTYPE_F32 => Ok(buffer.dtype),
        other => Err(Failure::invalid(format!(
            "impact_adjoint.jax: {what} must be float64 or float32, got {}",
            type_name(other)
        ))),
    }
}

/// The integer type of the event counts: int64, or int32 (JAX's integers
/// without 64-bit mode).
fn count_type(buffer: &Buffer) -> i32 {
    if buffer.dtype == DTYPE_S32 {
        DTYPE_S32
    } else {
        DTYPE_S64
    }
}

/// The shape a buffer must have: the batch axes `lead`, then `tail`.
fn check_shape(
    what: &str,
    buffer: &Buffer,
    dims: &[i64],
    dtype: i32,
    lead: &[i64],
    tail: &[usize],
) -> Result<usize, Failure> {
    let expected = || lead.iter().copied().chain(tail.iter().map(|&d| d as i64));
    if buffer.dtype != dtype {
        return Err(Failure::invalid(format!(
            "impact_adjoint.jax: {what} must be {}, got {} (the type of the initial state)",
            type_name(dtype),
            type_name(buffer.dtype)
        )));
    }
    // Compared without collecting the expected shape: a handler call
    // allocates nothing of its own on the way to the run.
    if !dims.iter().copied().eq(expected()) {
        let expected: Vec<i64> = expected().collect();
        return Err(Failure::invalid(format!(
            "impact_adjoint.jax: dimension mismatch in {what}: expected shape {expected:?}, got {dims:?}"
        )));
    }
    Ok(expected().map(|d| d as usize).product())
}

/// The frame's arguments (`n` of them) and results (`m`), counted.
fn check_counts(frame: &CallFrame, n: usize, m: usize) -> Result<(), Failure> {
    for (list, want, what) in [(&frame.args, n, "arguments"), (&frame.rets, m, "results")] {
        if list.struct_size < LIST_SIZE {
            return Err(Failure::invalid(format!(
                "impact_adjoint.jax: XLA_FFI_Args/Rets of {} bytes, expected at least {LIST_SIZE}",
                list.struct_size
            )));
        }
        if list.size != want as i64 {
            return Err(Failure::invalid(format!(
                "impact_adjoint.jax: the custom call takes {want} {what}, got {}",
                list.size
            )));
        }
    }
    Ok(())
}

/// The batch axes (those of `x0` before its last) and the flat batch size.
fn batch_axes<'a>(x0: &View<'a>) -> Result<(&'a [i64], usize), Failure> {
    let Some((_, lead)) = x0.dims.split_last() else {
        return Err(Failure::invalid(
            "impact_adjoint.jax: the initial state must have at least one axis".into(),
        ));
    };
    let batch = lead
        .iter()
        .map(|&d| usize::try_from(d).unwrap_or(0))
        .product();
    Ok((lead, batch))
}

/// `len` entries of an input buffer of `dtype` (float64, or float32
/// widened), as float64.
///
/// # Safety
/// `view` is a checked buffer of at least `len` entries of `dtype`.
unsafe fn input<'a>(view: &View<'a>, len: usize, dtype: i32) -> Cow<'a, [f64]> {
    if len == 0 {
        Cow::Borrowed(&[])
    } else if dtype == DTYPE_F32 {
        // SAFETY: the caller's contract; XLA keeps inputs alive for the call.
        let narrow = unsafe { std::slice::from_raw_parts(view.data.cast::<f32>(), len) };
        Cow::Owned(narrow.iter().map(|&x| f64::from(x)).collect())
    } else {
        // SAFETY: as above.
        Cow::Borrowed(unsafe { std::slice::from_raw_parts(view.data.cast::<f64>(), len) })
    }
}

/// `len` entries of a result buffer, writable.
///
/// # Safety
/// `view` is a checked result buffer of at least `len` entries of `T`,
/// distinct from every other buffer of the call.
unsafe fn output<'a, T>(view: &View<'a>, len: usize) -> &'a mut [T] {
    if len == 0 {
        &mut []
    } else {
        // SAFETY: the caller's contract; results are not aliased.
        unsafe { std::slice::from_raw_parts_mut(view.data.cast::<T>(), len) }
    }
}

/// A result buffer of a type other than the computed one (float32 results
/// of float64 work, int32 counts of int64 ones): written here first, then
/// converted into the buffer by [`Narrowed::store`].
enum Narrowed<'a, Wide, Narrow> {
    /// The buffer has the computed type: written in place.
    Direct(&'a mut [Wide]),
    /// The buffer is narrower: the computed values, then the buffer.
    Scratch(Vec<Wide>, &'a mut [Narrow]),
}

impl<'a, Wide: Copy + Default, Narrow> Narrowed<'a, Wide, Narrow> {
    /// The result buffer `view` of `len` entries, of the wide type when
    /// `wide` holds.
    ///
    /// # Safety
    /// As [`output`], for the type `wide` selects.
    unsafe fn new(view: &View<'a>, len: usize, wide: bool) -> Self {
        if wide {
            // SAFETY: the caller's contract.
            Narrowed::Direct(unsafe { output(view, len) })
        } else {
            // SAFETY: as above.
            Narrowed::Scratch(vec![Wide::default(); len], unsafe { output(view, len) })
        }
    }

    /// Where the computation writes.
    fn values(&mut self) -> &mut [Wide] {
        match self {
            Narrowed::Direct(values) => values,
            Narrowed::Scratch(values, _) => values,
        }
    }

    /// Writes the computed values into a narrower buffer, by `narrow`.
    fn store(self, narrow: impl Fn(Wide) -> Narrow) {
        if let Narrowed::Scratch(values, buffer) = self {
            for (slot, &v) in buffer.iter_mut().zip(&values) {
                *slot = narrow(v);
            }
        }
    }
}

/// float64 to float32, rounded to nearest.
fn to_f32(x: f64) -> f32 {
    x as f32
}

/// An event count as int32 (saturating: a count past `i32::MAX` is not a
/// run this library finishes).
fn to_i32(count: i64) -> i32 {
    i32::try_from(count).unwrap_or(i32::MAX)
}

/// A run's error in the library's words (`kind: message`, the kind naming
/// the Python exception class, `impact_adjoint._errors.error_class(kind)`).
fn library_failure(error: ia_scenario::ScenarioError) -> Failure {
    Failure::invalid(format!("{}: {}", error.kind(), error))
}

/// The final times of the runs, argument `index` of the frame: one per
/// run, on the batch axes `lead` (those of the initial state), of the
/// initial state's type, as float64.
fn final_times<'a>(
    frame: &'a CallFrame,
    index: usize,
    float: i32,
    lead: &[i64],
) -> Result<Cow<'a, [f64]>, Failure> {
    let (b, t) = buffer(&frame.args, index, "the final time")?;
    let len = check_shape("the final time", b, t.dims, float, lead, &[])?;
    // SAFETY: the buffer's dtype and shape were checked just above.
    Ok(unsafe { input(&t, len, float) })
}

/// [`OUTPUTS_TARGET`] at execution.
fn run_outputs(frame: &CallFrame) -> Result<(), Failure> {
    let (timed, rated) = (frame.args.size == 3, frame.rets.size == 5);
    check_counts(frame, 2 + usize::from(timed), 4 + usize::from(rated))?;
    let core = solver(frame)?;
    let Sizes {
        n,
        n_params,
        k,
        n_obs,
    } = core.sizes();
    let (b0, x0) = buffer(&frame.args, 0, "the initial state")?;
    let (lead, _) = batch_axes(&x0)?;
    let float = float_type("the initial state", b0)?;
    let nx = check_shape("the initial state", b0, x0.dims, float, lead, &[n])?;
    let (b1, p) = buffer(&frame.args, 1, "the parameters")?;
    let np = check_shape("the parameters", b1, p.dims, float, lead, &[n_params])?;
    let (r0, fin) = buffer(&frame.rets, 0, "the final state")?;
    let nf = check_shape("the final state", r0, fin.dims, float, lead, &[n])?;
    let (r1, times) = buffer(&frame.rets, 1, "the event times")?;
    let nt = check_shape("the event times", r1, times.dims, float, lead, &[k])?;
    let (r2, counts) = buffer(&frame.rets, 2, "the event count")?;
    let count = count_type(r2);
    let nc = check_shape("the event count", r2, counts.dims, count, lead, &[])?;
    let (r3, obs) = buffer(&frame.rets, 3, "the observed states")?;
    let no = check_shape(
        "the observed states",
        r3,
        obs.dims,
        float,
        lead,
        &[n_obs, n],
    )?;
    let t_end = timed
        .then(|| final_times(frame, 2, float, lead))
        .transpose()?;
    let rate = rated
        .then(|| {
            let (r4, rate) = buffer(&frame.rets, 4, "the final rate")?;
            let len = check_shape("the final rate", r4, rate.dims, float, lead, &[n])?;
            Ok((rate, len))
        })
        .transpose()?;
    let wide = float == DTYPE_F64;
    // SAFETY: each buffer's dtype and shape were checked just above.
    let mut rate = rate.map(|(rate, len)| unsafe { Narrowed::<f64, f32>::new(&rate, len, wide) });
    // SAFETY: as above.
    let (x0s, ps, mut fin, mut times, mut counts, mut obs) = unsafe {
        (
            input(&x0, nx, float),
            input(&p, np, float),
            Narrowed::<f64, f32>::new(&fin, nf, wide),
            Narrowed::<f64, f32>::new(&times, nt, wide),
            Narrowed::<i64, i32>::new(&counts, nc, count == DTYPE_S64),
            Narrowed::<f64, f32>::new(&obs, no, wide),
        )
    };
    let out = OutputsOut {
        final_state: fin.values(),
        event_times: times.values(),
        counts: counts.values(),
        observed: obs.values(),
        final_rate: rate.as_mut().map(|r| r.values()),
    };
    // `taped = 1`: a differentiated forward call, whose tapes are kept for
    // its backward pass.
    let taped = u64_attribute(frame, "taped")?.unwrap_or(0) != 0;
    core.outputs(&x0s, &ps, t_end.as_deref(), out, taped)
        .map_err(library_failure)?;
    if let Some(rate) = rate {
        rate.store(to_f32);
    }
    fin.store(to_f32);
    times.store(to_f32);
    counts.store(to_i32);
    obs.store(to_f32);
    Ok(())
}

/// [`GRADIENT_TARGET`] at execution.
fn run_gradient(frame: &CallFrame) -> Result<(), Failure> {
    let timed = frame.args.size == 6;
    check_counts(frame, 5 + usize::from(timed), 2)?;
    let core = solver(frame)?;
    let Sizes {
        n,
        n_params,
        k,
        n_obs,
    } = core.sizes();
    let (b0, x0) = buffer(&frame.args, 0, "the initial state")?;
    let (lead, batch) = batch_axes(&x0)?;
    let float = float_type("the initial state", b0)?;
    let nx = check_shape("the initial state", b0, x0.dims, float, lead, &[n])?;
    let (b1, p) = buffer(&frame.args, 1, "the parameters")?;
    let np = check_shape("the parameters", b1, p.dims, float, lead, &[n_params])?;
    let (b2, gf) = buffer(&frame.args, 2, "the cotangent of the final state")?;
    let ngf = check_shape(
        "the cotangent of the final state",
        b2,
        gf.dims,
        float,
        lead,
        &[n],
    )?;
    let (b3, gt) = buffer(&frame.args, 3, "the cotangent of the event times")?;
    let ngt = check_shape(
        "the cotangent of the event times",
        b3,
        gt.dims,
        float,
        lead,
        &[k],
    )?;
    let (b4, go) = buffer(&frame.args, 4, "the cotangent of the observed states")?;
    let ngo = check_shape(
        "the cotangent of the observed states",
        b4,
        go.dims,
        float,
        lead,
        &[n_obs, n],
    )?;
    let (r0, gx) = buffer(&frame.rets, 0, "the gradient of the initial state")?;
    let ngx = check_shape(
        "the gradient of the initial state",
        r0,
        gx.dims,
        float,
        lead,
        &[n],
    )?;
    let (r1, gp) = buffer(&frame.rets, 1, "the gradient of the parameters")?;
    let ngp = check_shape(
        "the gradient of the parameters",
        r1,
        gp.dims,
        float,
        lead,
        &[n_params],
    )?;
    let t_end = timed
        .then(|| final_times(frame, 5, float, lead))
        .transpose()?;
    let wide = float == DTYPE_F64;
    // SAFETY: each buffer's dtype and shape were checked just above.
    let (x0s, ps, gfs, gts, gos, mut gx, mut gp) = unsafe {
        (
            input(&x0, nx, float),
            input(&p, np, float),
            input(&gf, ngf, float),
            input(&gt, ngt, float),
            input(&go, ngo, float),
            Narrowed::<f64, f32>::new(&gx, ngx, wide),
            Narrowed::<f64, f32>::new(&gp, ngp, wide),
        )
    };
    let input_ = CotangentsIn {
        x0s: &x0s,
        params: &ps,
        final_state: &gfs,
        event_times: &gts,
        observed: &gos,
        t_ends: t_end.as_deref(),
    };
    core.cotangent_gradient(batch, &input_, gx.values(), gp.values())
        .map_err(library_failure)?;
    gx.store(to_f32);
    gp.store(to_f32);
    Ok(())
}

mod tangents;
#[cfg(test)]
mod tests;
