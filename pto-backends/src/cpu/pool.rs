//! The worker threads the fast paths share, kept for the whole process: a job hands its
//! parts to threads that are already running instead of starting threads of its own.
//!
//! One job runs on the pool at a time. [`run`] puts `job` up for `helpers` workers, runs
//! part 0 on the calling thread, then runs itself every part no worker has taken yet (a
//! worker slow to wake delays nothing), and returns once every part has finished. A call
//! while the pool is taken (by another thread, or from inside a job) runs on scoped threads
//! of its own, as every call did before the pool. Workers are started when a job first
//! needs them, never stopped, and wait on a condition variable between jobs (no CPU).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};

/// A job as the workers see it, its lifetime erased: [`run`] does not return before every
/// worker that took it has finished with it.
type Job = &'static (dyn Fn(usize) + Sync);

/// What the pool's threads share.
struct State {
    /// The job up for taking, while its parts are handed out.
    job: Option<Job>,
    /// The job's last part (parts `1..=last` go to workers).
    last: usize,
    /// The next part to hand out.
    next: usize,
    /// Workers running a part of the job.
    running: usize,
    /// The first panic of a worker's part, resumed by [`run`].
    panic: Option<Box<dyn Any + Send>>,
    /// Workers started.
    workers: usize,
}

struct Pool {
    state: Mutex<State>,
    /// Workers wait here for a job.
    work: Condvar,
    /// [`run`] waits here for the workers running its parts.
    done: Condvar,
    /// Held by [`run`] while its job is up: one job at a time.
    busy: Mutex<()>,
}

static POOL: OnceLock<Pool> = OnceLock::new();

impl Pool {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock (parts run unlocked).
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts workers until there are `wanted` (fewer if the system refuses a thread:
    /// [`run`] then runs the parts no worker takes).
    fn start_workers(&'static self, wanted: usize) {
        let mut state = self.lock();
        while state.workers < wanted {
            let started = std::thread::Builder::new()
                .name(format!("pto-cpu-{}", state.workers + 1))
                .spawn(move || self.serve());
            if started.is_err() {
                break;
            }
            state.workers += 1;
        }
    }

    /// A worker's loop: take a part of the job up, run it, report, wait for the next.
    fn serve(&self) {
        let mut state = self.lock();
        loop {
            match state.job {
                Some(job) if state.next <= state.last => {
                    let part = state.next;
                    state.next += 1;
                    state.running += 1;
                    drop(state);
                    let outcome = panic::catch_unwind(AssertUnwindSafe(|| job(part)));
                    state = self.lock();
                    state.running -= 1;
                    if let Err(payload) = outcome {
                        state.panic.get_or_insert(payload);
                    }
                    if state.running == 0 {
                        self.done.notify_all();
                    }
                }
                _ => {
                    state = self
                        .work
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner)
                }
            }
        }
    }
}

/// Runs `job(part)` for every part in `0..=helpers`, part 0 on this thread and the others
/// on kept worker threads (on this one too when no worker takes them first), and returns
/// when all have finished. A panic in any part is resumed here, after every part has
/// stopped.
pub(super) fn run(helpers: usize, job: &(dyn Fn(usize) + Sync)) {
    if helpers == 0 {
        job(0);
        return;
    }
    let pool = POOL.get_or_init(|| Pool {
        state: Mutex::new(State {
            job: None,
            last: 0,
            next: 1,
            running: 0,
            panic: None,
            workers: 0,
        }),
        work: Condvar::new(),
        done: Condvar::new(),
        busy: Mutex::new(()),
    });
    let _busy = match pool.busy.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => {
            // Taken: by another thread's job, or this is a part of a job calling in. Each
            // part is joined here, so a part's panic reaches the caller as it was raised
            // (an unjoined scoped thread's panic becomes "a scoped thread panicked").
            let panic = std::thread::scope(|scope| {
                let parts: Vec<_> = (1..=helpers)
                    .map(|part| scope.spawn(move || job(part)))
                    .collect();
                let mut first =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(0))).err();
                for part in parts {
                    if let Err(payload) = part.join() {
                        first.get_or_insert(payload);
                    }
                }
                first
            });
            if let Some(payload) = panic {
                std::panic::resume_unwind(payload);
            }
            return;
        }
    };
    pool.start_workers(helpers);
    // SAFETY: only the lifetime changes. The reference leaves the state below before this
    // function returns or unwinds (part 0's panic is caught), and it waits first for every
    // worker that took a part: no worker calls `job` after its borrow ends.
    #[allow(unsafe_code)]
    let erased: Job = unsafe {
        std::mem::transmute::<&(dyn Fn(usize) + Sync), &'static (dyn Fn(usize) + Sync)>(job)
    };
    {
        let mut state = pool.lock();
        state.job = Some(erased);
        state.last = helpers;
        state.next = 1;
        state.running = 0;
        state.panic = None;
    }
    pool.work.notify_all();
    let mut outcome = panic::catch_unwind(AssertUnwindSafe(|| job(0)));
    let mut state = pool.lock();
    // The parts no worker has taken: here, unless part 0 panicked.
    while outcome.is_ok() && state.next <= state.last {
        let part = state.next;
        state.next += 1;
        drop(state);
        outcome = panic::catch_unwind(AssertUnwindSafe(|| job(part)));
        state = pool.lock();
    }
    state.job = None;
    state.next = state.last + 1;
    while state.running > 0 {
        state = pool
            .done
            .wait(state)
            .unwrap_or_else(PoisonError::into_inner);
    }
    let worker_panic = state.panic.take();
    drop(state);
    if let Err(payload) = outcome {
        panic::resume_unwind(payload);
    }
    if let Some(payload) = worker_panic {
        panic::resume_unwind(payload);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::run;

    /// Runs `helpers + 1` parts and returns how many times each ran.
    fn counts(helpers: usize) -> Vec<usize> {
        let ran: Vec<AtomicUsize> = (0..=helpers).map(|_| AtomicUsize::new(0)).collect();
        run(helpers, &|part| {
            ran[part].fetch_add(1, Ordering::Relaxed);
        });
        ran.iter().map(|c| c.load(Ordering::Relaxed)).collect()
    }

    #[test]
    fn every_part_runs_once_on_every_call() {
        for helpers in [0, 1, 3, 1, 6] {
            for _ in 0..50 {
                assert_eq!(counts(helpers), vec![1; helpers + 1], "{helpers} helpers");
            }
        }
    }

    #[test]
    fn a_job_started_from_a_part_or_from_several_threads_runs_whole() {
        // Several threads at once (one takes the pool, the others run on scoped threads),
        // each of whose parts calls in again (the pool is taken: scoped threads).
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..20 {
                        let total = AtomicUsize::new(0);
                        run(2, &|_| {
                            let inner = counts(2);
                            total.fetch_add(inner.iter().sum(), Ordering::Relaxed);
                        });
                        assert_eq!(total.load(Ordering::Relaxed), 9);
                    }
                });
            }
        });
    }

    /// While another job holds the pool, a job runs on scoped threads: a part's panic still
    /// reaches the caller with its own message (it came back as "a scoped thread panicked",
    /// which failed the test below when the two ran at once).
    #[test]
    fn a_panic_in_a_part_of_a_job_beside_another_keeps_its_message() {
        let pool_taken = std::sync::Barrier::new(2);
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                run(1, &|part| {
                    if part == 0 {
                        pool_taken.wait();
                        while !done.load(Ordering::Acquire) {
                            std::thread::yield_now();
                        }
                    }
                });
            });
            pool_taken.wait();
            let caught = std::panic::catch_unwind(|| {
                run(2, &|part| assert_ne!(part, 2, "part {part} fails"));
            });
            done.store(true, Ordering::Release);
            let message = caught.expect_err("the panic is resumed");
            let text = message
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default();
            assert!(text.contains("part 2 fails"), "{text}");
        });
    }

    #[test]
    fn a_panic_in_a_part_reaches_the_caller_and_the_pool_still_works() {
        for bad in [0, 2] {
            let caught = std::panic::catch_unwind(|| {
                run(2, &|part| assert_ne!(part, bad, "part {part} fails"));
            });
            let message = caught.expect_err("the panic is resumed");
            let text = message
                .downcast_ref::<String>()
                .cloned()
                .unwrap_or_default();
            assert!(text.contains(&format!("part {bad} fails")), "{text}");
            assert_eq!(counts(2), vec![1; 3]);
        }
    }
}
