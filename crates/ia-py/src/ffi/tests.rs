//! The handlers' checks of what XLA hands them, with a fake API table.

use super::*;
use std::cell::RefCell;
use std::ptr::{null, null_mut};

/// The sizes of the mirrors against those of the C header on x86_64 and
/// aarch64 (LP64): `XLA_FFI_STRUCT_SIZE` of each, counted by hand from
/// the header's fields (8-byte pointers and size_t, 4-byte enums).
#[test]
fn mirrors_have_the_header_sizes() {
    assert_eq!(size_of::<ExtensionBase>(), 24);
    assert_eq!(API_VERSION_SIZE, 24);
    assert_eq!(ERROR_CREATE_ARGS_SIZE, 28);
    assert_eq!(BUFFER_SIZE, 48);
    assert_eq!(LIST_SIZE, 40);
    assert_eq!(ATTRS_SIZE, 48);
    // struct_size, extension_start, api, ctx, stage (+4 padding),
    // args, rets, attrs.
    assert_eq!(CALL_FRAME_SIZE, 8 * 4 + 8 + 40 + 40 + 48);
    assert_eq!(offset_of!(CallFrame, future), CALL_FRAME_SIZE);
    assert_eq!(METADATA_SIZE, 8 + 24 + 4);
    assert_eq!(METADATA_EXTENSION_SIZE, 32);
    // Error_Create is the first function of the table.
    assert_eq!(API_SIZE, 8 + 8 + 24 + 8 + 8);
}

fn version(major: i32, minor: i32) -> ApiVersion {
    ApiVersion {
        struct_size: API_VERSION_SIZE,
        extension_start: null_mut(),
        major_version: major,
        minor_version: minor,
    }
}

fn empty_list() -> List {
    List {
        struct_size: LIST_SIZE,
        extension_start: null_mut(),
        size: 0,
        types: null(),
        items: null(),
    }
}

/// A frame as XLA builds one (`BuildMetadataCallFrame` for the
/// metadata query: no API table, no arguments).
fn frame(api: *const Api, extension: *mut ExtensionBase, stage: i32) -> CallFrame {
    CallFrame {
        struct_size: CALL_FRAME_SIZE,
        extension_start: extension,
        api,
        ctx: null_mut(),
        stage,
        args: empty_list(),
        rets: empty_list(),
        attrs: Attrs {
            struct_size: ATTRS_SIZE,
            extension_start: null_mut(),
            size: 0,
            types: null(),
            names: null(),
            attrs: null(),
        },
        future: null_mut(),
    }
}

fn metadata_query(metadata: &mut Metadata) -> MetadataExtension {
    MetadataExtension {
        extension_base: ExtensionBase {
            struct_size: METADATA_EXTENSION_SIZE,
            kind: EXTENSION_METADATA,
            next: null_mut(),
        },
        metadata,
    }
}

#[test]
fn metadata_query_without_an_api_table_gets_the_version() {
    // XLA's query: version zeroed, no API table.
    let mut metadata = Metadata {
        struct_size: METADATA_SIZE,
        api_version: version(0, 0),
        traits: 7,
    };
    let mut extension = metadata_query(&mut metadata);
    let mut query = frame(null(), &mut extension.extension_base, STAGE_EXECUTE);
    assert!(outputs_handler(&mut query).is_null());
    assert_eq!(
        (
            metadata.api_version.major_version,
            metadata.api_version.minor_version
        ),
        (API_MAJOR, API_MINOR)
    );
    assert_eq!(metadata.api_version.struct_size, API_VERSION_SIZE);
    assert_eq!(metadata.traits, 0);
    // A metadata struct too small to hold the answer is left alone
    // (XLA then refuses the registration for version 0.0).
    let mut small = Metadata {
        struct_size: METADATA_SIZE - 4,
        api_version: version(0, 0),
        traits: 0,
    };
    let mut extension = metadata_query(&mut small);
    let mut query = frame(null(), &mut extension.extension_base, STAGE_EXECUTE);
    assert!(gradient_handler(&mut query).is_null());
    assert_eq!(small.api_version.major_version, 0);
    assert_eq!(small.api_version.minor_version, 0);
}

thread_local! {
    /// The errors the fake `XLA_FFI_Error_Create` was asked for.
    static ERRORS: RefCell<Vec<(i32, String)>> = const { RefCell::new(Vec::new()) };
}

/// A stand-in for XLA's `XLA_FFI_Error_Create`: records the code and
/// the message, returns a non-null token.
unsafe extern "C" fn fake_error_create(args: *mut ErrorCreateArgs) -> *mut XlaError {
    // SAFETY: called by `create_error` with valid arguments.
    let args = unsafe { &*args };
    assert_eq!(args.struct_size, ERROR_CREATE_ARGS_SIZE);
    // SAFETY: a NUL-terminated message that lives across the call.
    let message = unsafe { std::ffi::CStr::from_ptr(args.message) };
    let message = message.to_string_lossy().into_owned();
    ERRORS.with(|e| e.borrow_mut().push((args.errc, message)));
    NonNull::<XlaError>::dangling().as_ptr()
}

fn api(major: i32) -> Api {
    Api {
        struct_size: API_SIZE,
        extension_start: null_mut(),
        api_version: version(major, API_MINOR),
        internal_api: null(),
        error_create: Some(fake_error_create),
    }
}

/// The error a handler returned for `frame`, by way of the fake API.
fn error_of(
    handler: extern "C" fn(*mut CallFrame) -> *mut XlaError,
    frame: &mut CallFrame,
) -> Option<(i32, String)> {
    ERRORS.with(|e| e.borrow_mut().clear());
    let returned = handler(frame);
    let recorded = ERRORS.with(|e| e.borrow_mut().pop());
    assert_eq!(returned.is_null(), recorded.is_none());
    recorded
}

#[test]
fn execution_errors_go_through_the_api_table() {
    let table = api(API_MAJOR);
    // No arguments at all: refused by count, with XLA's code for a bad
    // argument.
    let mut call = frame(&table, null_mut(), STAGE_EXECUTE);
    let (code, message) = error_of(outputs_handler, &mut call).expect("an error");
    assert_eq!(code, ERROR_INVALID_ARGUMENT);
    assert!(message.contains("takes 2 arguments, got 0"), "{message}");
    let (_, message) = error_of(gradient_handler, &mut call).expect("an error");
    assert!(message.contains("takes 5 arguments, got 0"), "{message}");
    // Stages before execution do nothing and succeed.
    let mut prepare = frame(&table, null_mut(), STAGE_EXECUTE - 2);
    assert_eq!(error_of(outputs_handler, &mut prepare), None);
    // A frame smaller than the one mirrored here.
    let mut short = frame(&table, null_mut(), STAGE_EXECUTE);
    short.struct_size = CALL_FRAME_SIZE - 8;
    let (_, message) = error_of(outputs_handler, &mut short).expect("an error");
    assert!(
        message.contains("XLA_FFI_CallFrame of 160 bytes, expected at least 168"),
        "{message}"
    );
    // Another major version of the API: refused before reading more.
    let other = api(API_MAJOR + 1);
    let mut call = frame(&other, null_mut(), STAGE_EXECUTE);
    let (_, message) = error_of(outputs_handler, &mut call).expect("an error");
    assert!(
        message.contains("speaks the XLA FFI C API 1.3, these handlers 0.3"),
        "{message}"
    );
}
