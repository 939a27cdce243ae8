//! A read-only memory map of a plain file, so that its bytes are handed out
//! where the page cache holds them: no copy into a read buffer, and the
//! pages of skipped payloads are never touched.
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
