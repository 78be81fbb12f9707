//! Fixed-size arrays of plain values for the simulated engines' caches (sim_cache.rs), in 2 MiB
//! pages where the kernel gives them (Linux, transparent huge pages in `madvise` mode, as it is by
//! default). A trace replay probes four engines' megabytes of block records, hash slots and LRU
//! entries at random: with 4 KiB pages nearly every probe also misses the TLB (thousands of pages
//! against a TLB of about two thousand entries), with 2 MiB pages a handful of entries cover them.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

const HUGE: usize = 2 << 20;

pub struct Pages<T: Copy> {
  ptr: NonNull<T>,
  len: usize,
  layout: Layout,
}

impl<T: Copy> Pages<T> {
  /// `len` copies of `value`.
  pub fn new(len: usize, value: T) -> Self {
    let bytes = len.checked_mul(std::mem::size_of::<T>()).expect("a cache's arrays fit in memory");
    // Arrays of half a huge page or more get whole ones (the rest of the last stays untouched).
    let huge = bytes >= HUGE / 2;
    let (size, align) = if huge { (bytes.div_ceil(HUGE) * HUGE, HUGE) } else { (bytes.max(1), std::mem::align_of::<T>()) };
    let layout = Layout::from_size_align(size, align.max(std::mem::align_of::<T>())).expect("a valid layout");
    // SAFETY: a layout of non-zero size; the memory is written below before it is read.
    let ptr = unsafe { alloc(layout) } as *mut T;
    let Some(ptr) = NonNull::new(ptr) else { handle_alloc_error(layout) };
    if huge {
      advise_huge(ptr.as_ptr() as *mut u8, size);
    }
    for i in 0..len {
      // SAFETY: in bounds of the allocation, suitably aligned.
      unsafe { ptr.as_ptr().add(i).write(value) };
    }
    Self { ptr, len, layout }
  }
}

/// Asks for huge pages before the first touch (afterwards the range is already in small pages).
#[cfg(target_os = "linux")]
fn advise_huge(p: *mut u8, size: usize) {
  const MADV_HUGEPAGE: i32 = 14;
  extern "C" {
    fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
  }
  // SAFETY: advice on memory this process owns; a failure (no THP support) changes nothing.
  unsafe { madvise(p as *mut std::ffi::c_void, size, MADV_HUGEPAGE) };
}

#[cfg(not(target_os = "linux"))]
fn advise_huge(_: *mut u8, _: usize) {}

impl<T: Copy> Pages<T> {
  /// Bytes allocated (whole huge pages for a large array).
  pub fn allocated(&self) -> usize {
    self.layout.size()
  }
}

impl<T: Copy> Deref for Pages<T> {
  type Target = [T];
  fn deref(&self) -> &[T] {
    // SAFETY: `len` initialised values, owned by self.
    unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
  }
}

impl<T: Copy> DerefMut for Pages<T> {
  fn deref_mut(&mut self) -> &mut [T] {
    // SAFETY: as in deref, borrowed mutably through self.
    unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
  }
}

impl<T: Copy> Drop for Pages<T> {
  fn drop(&mut self) {
    // SAFETY: allocated in `new` with this layout.
    unsafe { dealloc(self.ptr.as_ptr() as *mut u8, self.layout) };
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn holds_its_values_small_and_large() {
    for len in [0usize, 3, 1 << 19] {
      let mut p = Pages::new(len, 7u32);
      assert_eq!(p.len(), len);
      assert!(p.iter().all(|v| *v == 7));
      if len > 0 {
        p[len - 1] = 9;
        assert_eq!(p[len - 1], 9);
      }
    }
  }
}
