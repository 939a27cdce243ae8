//! A read-only memory map of a file, so that its bytes are handed out
//! where the page cache holds them: no copy into a read buffer, and the
//! pages of a plain file's skipped payloads are never touched. A
//! compressed file is mapped for its jobs when decoded on threads, and
//! for the reading thread's codec where the map is the cheaper way
//! ([`FileMap::cheap_to_read`]).
//!
//! A map is only safe while the file does not shrink under it: reading a
//! mapped page past the file's end raises SIGBUS. Two guards:
//!
//! - the decoder only hands out mapped bytes below the file's size, taken
//!   with `fstat` ([`FileMap::refresh`]) each time it extends the window of
//!   bytes it serves (once per buffer's worth, or after a skip past it): a
//!   file that shrank is then an error, named with file and offset by the
//!   reader;
//! - a truncation racing that check (the file cut while a reader is paused
//!   with a window checked before) is caught by a SIGBUS handler: when the
//!   fault is inside a registered map, it maps a page of zeros over the
//!   faulting page, raises the map's flag and returns, so the read goes on
//!   with zeros; the decoder checks the flag on each `fill_buf`
//!   ([`FileMap::refresh`] too) and fails with the same error. Faults
//!   outside registered maps go to the handler that was there before (the
//!   default one ends the process as it would have). The handler is
//!   installed when the first map is made.
//!
//! The choice is in docs/performance-history.md (Issue 20, Plain files). This is
//! the crate's one `unsafe` module besides the libdeflate bindings
//! (`inflate.rs`), behind the default `mmap` feature on Linux; without it
//! [`FileMap`] cannot be made and every file is read through the buffer.
//! [`prefetch`], a cache hint for the bytes after a skipped payload (which
//! a map leaves cold), is here too, in every build.

#[cfg(all(test, target_os = "linux", feature = "mmap"))]
pub(super) use imp::CHEAP_ON_THIS_THREAD;
#[cfg(all(target_os = "linux", feature = "mmap"))]
pub(super) use imp::FileMap;

/// Starts loading the cache lines under the first 256 bytes of `bytes`
/// without waiting for them: for bytes the reader will look at soon (the
/// trailer after a skipped payload and the next header, which in a map are
/// not in the cache), so that the wait for memory overlaps the work in
/// between instead of stalling the read (docs/performance-history.md, Plain
/// files). A hint: nothing is read into the program and nothing faults (a
/// page not mapped yet is left alone).
#[inline]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        let n = bytes.len().min(256);
        let mut i = 0;
        while i < n {
            // SAFETY: `prefetcht0` of an address inside `bytes` (`i < n <=
            // len`): a hint that reads nothing into the program and never
            // faults; SSE, which it needs, is in every x86-64 CPU.
            #[allow(unsafe_code)]
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    bytes.as_ptr().add(i).cast(),
                );
            }
            i += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}
#[cfg(not(all(target_os = "linux", feature = "mmap")))]
pub(super) use off::FileMap;

/// The environment variable that turns memory maps off when set to
/// anything but `0` or nothing: every file is then read through a buffer
/// (`pread`), as a file that is not a regular one always is.
#[cfg_attr(not(all(target_os = "linux", feature = "mmap")), allow(dead_code))]
pub(crate) const NO_MMAP: &str = "WARCHEST_NO_MMAP";

/// The user turned maps off ([`NO_MMAP`]), read once.
#[cfg(all(target_os = "linux", feature = "mmap"))]
fn maps_refused() -> bool {
    static REFUSED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *REFUSED.get_or_init(|| std::env::var_os(NO_MMAP).is_some_and(|v| !v.is_empty() && v != "0"))
}

#[cfg(all(target_os = "linux", feature = "mmap"))]
#[allow(unsafe_code)]
mod imp {
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// How many consumed bytes a map keeps mapped before handing them back.
    const RELEASE_STEP: usize = 8 << 20;

    /// The bytes [`FileMap::cheap_to_read`] touches, in the file's middle.
    const PROBE: usize = 1 << 20;

    /// Files shorter than this are read with `read` calls once payloads are
    /// read: their middle is still inside the first readahead windows of a
    /// file read back from disk, which the page cache holds in small pages
    /// (see [`FileMap::cheap_to_read`]).
    const PROBE_MIN_LEN: usize = 32 << 20;

    /// At most this many faults for the [`PROBE`] bytes (256 KiB or more a
    /// fault) make the map the cheaper way to read payloads: 64 KiB a
    /// fault, the kernel's fault-around, gives 16.
    const CHEAP_FAULTS: u64 = 4;

    #[cfg(test)]
    thread_local! {
        /// [`FileMap::cheap_to_read`]'s answer for maps first asked on this
        /// thread, where set (tests of both ways through a decoder that
        /// makes its own map).
        pub(in super::super) static CHEAP_ON_THIS_THREAD: std::cell::Cell<Option<bool>> =
            const { std::cell::Cell::new(None) };
    }

    /// Page faults of the calling thread so far (minor and major).
    fn thread_faults() -> Option<u64> {
        // SAFETY: a zeroed `rusage` is a valid value; the call only writes
        // the struct given.
        let ru = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
                return None;
            }
            ru
        };
        let minor = u64::try_from(ru.ru_minflt).ok()?;
        let major = u64::try_from(ru.ru_majflt).ok()?;
        Some(minor.saturating_add(major))
    }

    /// Maps live at once; past this, files are read through the buffer.
    const SLOTS: usize = 64;

    /// A registered map, read by the signal handler: lock-free.
    struct Slot {
        /// Claimed by a map.
        used: AtomicBool,
        start: AtomicUsize,
        /// 0 while the slot is being (un)registered.
        len: AtomicUsize,
        /// A page of the map was replaced by zeros after a SIGBUS.
        faulted: AtomicBool,
    }

    static REGISTRY: [Slot; SLOTS] = [const {
        Slot {
            used: AtomicBool::new(false),
            start: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            faulted: AtomicBool::new(false),
        }
    }; SLOTS];

    /// The SIGBUS action before ours (set once, before ours is installed).
    static PREVIOUS: OnceLock<Option<libc::sigaction>> = OnceLock::new();
    static PAGE: AtomicUsize = AtomicUsize::new(4096);

    /// Installs the SIGBUS handler once; false when it could not be.
    fn install() -> bool {
        let prev = PREVIOUS.get_or_init(|| {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            if let Ok(p) = usize::try_from(page)
                && p.is_power_of_two()
            {
                PAGE.store(p, Ordering::Relaxed);
            }
            // SAFETY: a zeroed `sigaction` is a valid value (no handler, no
            // flags, empty mask); the calls only read and write the two
            // structs given.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(libc::SIGBUS, std::ptr::null(), &mut old) != 0 {
                    return None;
                }
                let mut new: libc::sigaction = std::mem::zeroed();
                new.sa_sigaction = on_sigbus as *const () as libc::sighandler_t;
                new.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut new.sa_mask);
                // Saved before ours runs: the handler chains to it.
                let saved = old;
                if libc::sigaction(libc::SIGBUS, &new, std::ptr::null_mut()) != 0 {
                    return None;
                }
                Some(saved)
            }
        });
        prev.is_some()
    }

    /// The SIGBUS handler: only atomics and `mmap`/`sigaction` calls
    /// (system calls, safe in a signal handler).
    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO
        // handlers; for SIGBUS `si_addr` is the faulting address.
        let addr = unsafe { (*info).si_addr() } as usize;
        for slot in &REGISTRY {
            let len = slot.len.load(Ordering::Acquire);
            let start = slot.start.load(Ordering::Acquire);
            if len == 0 || addr < start || addr - start >= len {
                continue;
            }
            let page = PAGE.load(Ordering::Relaxed);
            let at = addr & !(page - 1);
            // SAFETY: replaces one page of our own read-only map (registered,
            // so still mapped: a map leaves the registry before it is
            // unmapped) by a private page of zeros; nothing else lives at
            // that address.
            let p = unsafe {
                libc::mmap(
                    at as *mut libc::c_void,
                    page,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                slot.faulted.store(true, Ordering::Release);
                return;
            }
        }
        // Not ours: what would have happened without us.
        match PREVIOUS.get().copied().flatten() {
            Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
                if old.sa_flags & libc::SA_SIGINFO != 0 {
                    // SAFETY: an SA_SIGINFO handler has this signature.
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        unsafe { std::mem::transmute(old.sa_sigaction) };
                    f(sig, info, ctx);
                } else {
                    // SAFETY: a plain handler has this signature.
                    let f: extern "C" fn(libc::c_int) =
                        unsafe { std::mem::transmute(old.sa_sigaction) };
                    f(sig);
                }
            }
            _ => {
                // SAFETY: restores the default action; returning re-runs the
                // faulting access, which then ends the process with SIGBUS.
                unsafe {
                    let mut dfl: libc::sigaction = std::mem::zeroed();
                    dfl.sa_sigaction = libc::SIG_DFL;
                    libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
                }
            }
        }
    }

    /// A whole file mapped read-only and registered with the handler, with
    /// its own handle for `fstat`.
    pub(in super::super) struct FileMap {
        ptr: *mut libc::c_void,
        /// Mapped length: the file's size when mapped (grown by
        /// [`FileMap::refresh`]), never 0.
        len: usize,
        slot: &'static Slot,
        file: File,
        /// Bytes below this were handed back to the kernel ([`FileMap::release`]).
        released: usize,
        /// [`FileMap::cheap_to_read`]'s answer, once measured.
        cheap: Option<bool>,
    }

    // SAFETY: the mapping is read-only and owned by this value alone (no
    // other handle to `ptr` exists); reading it from another thread than
    // the one that made it is what any `&[u8]` allows.
    unsafe impl Send for FileMap {}
    // SAFETY: as for `Send`: `&FileMap` only gives out `&[u8]`.
    unsafe impl Sync for FileMap {}

    /// Maps `len` bytes of `file` read-only.
    fn map(file: &File, len: usize) -> io::Result<*mut libc::c_void> {
        // SAFETY: a fresh mapping placed by the kernel (no address given),
        // of a descriptor open for the duration of the call; nothing is
        // read through it here.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(p)
    }

    /// Unmaps what `map` made.
    fn unmap(ptr: *mut libc::c_void, len: usize) {
        // SAFETY: `ptr`, `len` are a mapping made by `map` (pages the
        // handler replaced included), unmapped once, after it left the
        // registry and with no slice of it alive (callers hold `&mut`).
        unsafe {
            libc::munmap(ptr, len);
        }
    }

    impl FileMap {
        /// Maps `file` (a duplicate handle is kept for `fstat`). `None`
        /// when it is empty, not a regular file, cannot be mapped, the
        /// handler cannot be installed or has no free slot, or the user
        /// turned maps off (`WARCHEST_NO_MMAP`): the caller reads it instead.
        pub(in super::super) fn new(file: &File) -> Option<FileMap> {
            if super::maps_refused() {
                return None;
            }
            let meta = file.metadata().ok()?;
            if !meta.is_file() || !install() {
                return None;
            }
            let len = usize::try_from(meta.len()).ok().filter(|&l| l > 0)?;
            let slot = REGISTRY.iter().find(|s| {
                s.used
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            })?;
            let made = file.try_clone().and_then(|f| Ok((map(&f, len)?, f)));
            let Ok((ptr, file)) = made else {
                slot.used.store(false, Ordering::Release);
                return None;
            };
            slot.faulted.store(false, Ordering::Release);
            slot.start.store(ptr as usize, Ordering::Release);
            slot.len.store(len, Ordering::Release);
            Some(FileMap {
                ptr,
                len,
                slot,
                file,
                released: 0,
                cheap: None,
            })
        }

        /// All mapped bytes. Only bytes below the size [`FileMap::refresh`]
        /// last returned may be read.
        #[inline]
        pub(in super::super) fn bytes(&self) -> &[u8] {
            // SAFETY: `ptr` maps `len` readable bytes for as long as `self`
            // lives (unmapped only in `drop` or replaced in `refresh`, both
            // of which need `&mut self`, so no slice outlives its mapping);
            // any byte is a valid `u8`. A page past the file's end, should
            // the file shrink after `refresh`, faults into the handler,
            // which maps zeros there and raises the flag `check` reads.
            unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
        }

        /// An error when a read of the map faulted (the file shrank).
        #[inline]
        pub(in super::super) fn check(&self) -> io::Result<()> {
            if self.slot.faulted.load(Ordering::Acquire) {
                return Err(shrank(format!(
                    "the file shrank while it was being read (bytes past its new end read \
                     as zeros); it had {} bytes",
                    self.len
                )));
            }
            Ok(())
        }

        /// Drops the map's pages below `below` from this process (they
        /// stay in the page cache), so that a scan's resident memory stays
        /// bounded instead of growing to the file's size. Reading them
        /// again is correct, only slower: they fault back in from the file.
        /// Done in steps of [`RELEASE_STEP`] to keep the calls few.
        pub(in super::super) fn release(&mut self, below: usize) {
            let page = PAGE.load(Ordering::Relaxed);
            let upto = below.min(self.len) & !(page - 1);
            if upto < self.released.saturating_add(RELEASE_STEP) {
                return;
            }
            self.released = self.forget(self.released, upto);
        }

        /// Drops the map's whole pages in `from..to` from this process, as
        /// [`FileMap::release`] does, while other threads may be reading
        /// the map (the parallel engine's jobs): a page read again, there
        /// or elsewhere, faults back in with the file's bytes. Returns the
        /// end of what was dropped (`to` rounded down to a page).
        pub(in super::super) fn forget(&self, from: usize, to: usize) -> usize {
            let page = PAGE.load(Ordering::Relaxed);
            let a = from & !(page - 1);
            let b = to.min(self.len) & !(page - 1);
            if b <= a {
                return a;
            }
            // SAFETY: `a..b` lies within our own mapping (`b <= len`, both
            // page-aligned offsets from the page-aligned `ptr`), which lives
            // as long as `self`. MADV_DONTNEED on a read-only shared file
            // mapping only drops page-table entries: the bytes any reader
            // sees afterwards, on this thread or another, are the file's
            // (or the handler's zeros past a shrunk file's end, as
            // before), so a `&[u8]` of the map alive meanwhile reads the
            // same bytes it would have.
            unsafe {
                libc::madvise(
                    self.ptr.cast::<u8>().add(a).cast(),
                    b - a,
                    libc::MADV_DONTNEED,
                );
            }
            b
        }

        /// Whether payloads read through the map cost less than `read`
        /// calls, which depends on how the page cache holds the file, not on
        /// the code: a file read back from disk (past its first readahead
        /// windows) is held in large folios, each mapped by one fault, and
        /// the map's copy is then about a fifth cheaper than the kernel's;
        /// one written in small pieces (`gzip -dc`, a 4 KiB `dd`) is held in
        /// pages, mapped 64 KiB a fault, and the map costs about a fifth
        /// more (docs/performance-history.md, round fifteen). Told apart by
        /// counting this thread's faults while one byte of each page of a
        /// MiB in the file's middle is read, when that MiB is in the page
        /// cache ([`CHEAP_FAULTS`]); files under [`PROBE_MIN_LEN`], and a
        /// middle not cached, get `false`. Measured once: the pages touched
        /// are read later by a reader going through the file anyway.
        pub(in super::super) fn cheap_to_read(&mut self) -> bool {
            if let Some(cheap) = self.cheap {
                return cheap;
            }
            #[cfg(test)]
            if let Some(cheap) = CHEAP_ON_THIS_THREAD.get() {
                self.cheap = Some(cheap);
                return cheap;
            }
            let cheap = self.probe().is_some_and(|faults| faults <= CHEAP_FAULTS);
            self.cheap = Some(cheap);
            cheap
        }

        /// The faults of reading a byte of each page of the [`PROBE`]
        /// bytes in the file's middle; `None` when the file is under
        /// [`PROBE_MIN_LEN`], those bytes are not all in the page cache, or
        /// the faults cannot be counted.
        fn probe(&self) -> Option<u64> {
            let page = PAGE.load(Ordering::Relaxed);
            if self.len < PROBE_MIN_LEN || page > PROBE {
                return None;
            }
            // In bounds: `at <= len / 2` and `len / 2 >= PROBE`.
            let at = (self.len / 2) & !(PROBE - 1);
            let pages = PROBE / page;
            let mut cached = vec![0u8; pages];
            // SAFETY: `at..at + PROBE` lies within our mapping (see above),
            // `at` is page-aligned (a multiple of `PROBE`, itself a multiple
            // of the page size) as is `ptr`; `cached` has one byte for each
            // of its pages.
            let known = unsafe {
                libc::mincore(
                    self.ptr.cast::<u8>().add(at).cast(),
                    PROBE,
                    cached.as_mut_ptr().cast(),
                )
            } == 0;
            if !known || cached.iter().any(|&b| b & 1 == 0) {
                return None;
            }
            let before = thread_faults()?;
            for i in 0..pages {
                // SAFETY: a byte inside our live read-only mapping (as for
                // `mincore`); volatile, so that the read, and its fault,
                // happen. A page past the end of a file that shrank faults
                // into the handler, as any read of the map would.
                unsafe {
                    std::ptr::read_volatile(self.ptr.cast::<u8>().add(at + i * page));
                }
            }
            Some(thread_faults()?.saturating_sub(before))
        }

        /// Bytes handed back so far (for tests).
        #[cfg(test)]
        pub(in super::super) fn released(&self) -> usize {
            self.released
        }

        /// The file's size now, checked with `fstat`: bytes below it may be
        /// read. A file that grew is mapped again, whole.
        ///
        /// # Errors
        /// The file shrank since it was mapped, or `fstat` or the new
        /// mapping failed.
        pub(in super::super) fn refresh(&mut self) -> io::Result<usize> {
            self.check()?;
            let size = self.file.metadata()?.len();
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            if size < self.len {
                return Err(shrank(format!(
                    "the file shrank from {} to {size} bytes while it was being read",
                    self.len
                )));
            }
            if size > self.len {
                let ptr = map(&self.file, size)?;
                self.slot.len.store(0, Ordering::Release);
                unmap(self.ptr, self.len);
                self.ptr = ptr;
                self.len = size;
                self.released = 0;
                self.slot.start.store(ptr as usize, Ordering::Release);
                self.slot.len.store(size, Ordering::Release);
            }
            Ok(self.len)
        }
    }

    impl AsRef<[u8]> for FileMap {
        /// [`FileMap::bytes`]: for a job's bytes lent from the map.
        fn as_ref(&self) -> &[u8] {
            self.bytes()
        }
    }

    fn shrank(msg: String) -> io::Error {
        io::Error::new(io::ErrorKind::UnexpectedEof, msg)
    }

    impl Drop for FileMap {
        fn drop(&mut self) {
            self.slot.len.store(0, Ordering::Release);
            unmap(self.ptr, self.len);
            self.slot.used.store(false, Ordering::Release);
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The probe reads the pages it counts (a fresh map faults), counts
        /// only this thread's faults of them (none once they are mapped),
        /// and leaves small files to `read` calls.
        #[test]
        fn the_probe_counts_the_faults_of_a_mib_in_the_middle() {
            let dir = tempfile::tempdir().unwrap();
            let small = dir.path().join("small");
            std::fs::write(&small, vec![7u8; PROBE_MIN_LEN - 1]).unwrap();
            let mut m = FileMap::new(&File::open(&small).unwrap()).unwrap();
            assert_eq!(m.probe(), None);
            assert!(!m.cheap_to_read());

            let big = dir.path().join("big");
            std::fs::write(&big, vec![7u8; PROBE_MIN_LEN + PROBE]).unwrap();
            let mut m = FileMap::new(&File::open(&big).unwrap()).unwrap();
            // Just written, so in the page cache.
            let first = m.probe().expect("a cached middle is probed");
            assert!((1..=(PROBE / 4096) as u64).contains(&first), "{first}");
            assert_eq!(m.probe(), Some(0));
            // The answer is the probe's (no fault now), kept once given.
            assert!(m.cheap_to_read());
            CHEAP_ON_THIS_THREAD.set(Some(false));
            assert!(m.cheap_to_read());
            let mut fresh = FileMap::new(&File::open(&big).unwrap()).unwrap();
            assert!(!fresh.cheap_to_read());
            CHEAP_ON_THIS_THREAD.set(None);
        }
    }
}

#[cfg(not(all(target_os = "linux", feature = "mmap")))]
mod off {
    use std::fs::File;
    use std::io;

    /// Without the `mmap` feature (or off Linux) no map is ever made.
    pub(in super::super) enum FileMap {}

    impl FileMap {
        pub(in super::super) fn new(_file: &File) -> Option<FileMap> {
            None
        }

        pub(in super::super) fn bytes(&self) -> &[u8] {
            match *self {}
        }

        pub(in super::super) fn refresh(&mut self) -> io::Result<usize> {
            match *self {}
        }

        pub(in super::super) fn check(&self) -> io::Result<()> {
            match *self {}
        }

        pub(in super::super) fn release(&mut self, _below: usize) {
            match *self {}
        }

        pub(in super::super) fn cheap_to_read(&mut self) -> bool {
            match *self {}
        }

        #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
        pub(in super::super) fn forget(&self, _from: usize, _to: usize) -> usize {
            match *self {}
        }
    }

    impl AsRef<[u8]> for FileMap {
        fn as_ref(&self) -> &[u8] {
            match *self {}
        }
    }
}
