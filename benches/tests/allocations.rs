//! Heap allocations of one full forward Jacobian of `ball2d_flat_a`,
//! counted by a counting global allocator.
//!
//! The target of issue 8 is at most 10 per call; today a call makes 62
//! (measured by this test with `--nocapture`; 87 before the records held
//! indices instead of names and the forward jump stopped forming a dense
//! saltation): the result clones the column names and keeps one
//! `dt*/dtheta` vector per event, the records copy each event's states, and
//! the stepper, integrator and event-geometry buffers are allocated per
//! call. The bound below is that measured count, so the test fails as soon
//! as a change adds an allocation; lower it as the records get lean.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn forward_jacobian_of_ball2d_counts_its_allocations() {
    use ia_adjoint::{jacobian, Method};
    use ia_benches::ball2d;
    let system = ball2d::system();
    let problem = ball2d::problem(&system);
    jacobian(&problem, Method::Forward).unwrap();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    let sens = jacobian(&problem, Method::Forward).unwrap();
    let count = ALLOCATIONS.load(Ordering::Relaxed) - before;
    assert_eq!(sens.trajectory.events.len(), 3);
    eprintln!("allocations per forward Jacobian: {count}");
    const MEASURED: usize = 62;
    assert!(
        count <= MEASURED,
        "{count} allocations per forward Jacobian, more than the {MEASURED} measured"
    );
}
