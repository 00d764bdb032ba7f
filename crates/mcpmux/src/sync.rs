//! Locks that outlive a panicked holder. The library's locks guard plain data (tool lists,
//! states, caches) that stays consistent between statements, so a panic elsewhere must not
//! turn every later lock into a second panic: the guard is taken back from the poison.
//! Public so the crates over the library (the gateway) recover their locks the same way.
//! Knows nothing of what it guards.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Locks `mutex`, recovering the guard if a holder panicked.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Read-locks `lock`, recovering the guard if a writer panicked.
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write-locks `lock`, recovering the guard if a holder panicked.
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_poisoned_by_a_panicking_holder_still_hands_out_its_data() {
        let mutex = std::sync::Arc::new(Mutex::new(vec![1]));
        let rw = std::sync::Arc::new(RwLock::new(7));
        let (m, r) = (mutex.clone(), rw.clone());
        let _ = std::thread::spawn(move || {
            let _guard = m.lock();
            let _write = r.write();
            panic!("holder dies");
        })
        .join();
        assert!(mutex.is_poisoned() && rw.is_poisoned());
        lock(&mutex).push(2);
        assert_eq!(*lock(&mutex), vec![1, 2]);
        *write(&rw) += 1;
        assert_eq!(*read(&rw), 8);
    }
}
