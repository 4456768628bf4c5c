//! A dataset folder shared by many writers: shards of one sweep started at
//! once (a Kubernetes Indexed Job, a Slurm array), a second command in the
//! same folder, a run killed half-way.
//!
//! Three rules keep every writer's work whole:
//! - **Temporary files belong to their writer.** Each process that writes
//!   into a folder registers as a writer: it holds an exclusive lock on
//!   `OUT/.stormsim/writers/<id>.lock` (`<id>` is the host name and process
//!   id) for as long as it lives, and names its temporary files after that
//!   id. A temporary file is removed by someone else only when its writer
//!   is proven dead: its lock file is gone, or can be locked. Locks are
//!   `flock`s, released by the kernel when a process dies however it dies,
//!   and honoured across hosts by network file systems that support them.
//! - **Files appear whole.** Everything is written to a temporary name,
//!   synced, then renamed into place.
//! - **One experiment per folder.** The manifest is claimed under an
//!   exclusive lock (`OUT/.stormsim/claim.lock`): of two different
//!   experiments started at once, exactly one wins; the other is refused.
//!
//! Every I/O error names its path.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The folder inside a dataset that holds its locks.
const STATE_DIR: &str = ".stormsim";
/// What marks a temporary file's name: `.<name>.tmp~<writer id>~<n>`.
const TEMP_MARK: &str = ".tmp~";

/// An I/O error, with the path it concerns.
pub fn io_error(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("cannot {what} {}: {e}", path.display())
}

/// Creates `dir` and its parents, naming it when that fails (an `--out`
/// that is a file, `/dev/null`, or a read-only place).
pub fn create_dir(dir: &Path) -> Result<(), String> {
    if let Ok(meta) = fs::metadata(dir)
        && !meta.is_dir()
    {
        return Err(format!(
            "{} is not a directory: give --out a directory (it is created if missing)",
            dir.display()
        ));
    }
    fs::create_dir_all(dir).map_err(|e| io_error("create the directory", dir, e))
}

/// This machine's name, for writer ids (distinct per Kubernetes pod and per
/// Slurm node, where process ids repeat).
fn host_name() -> String {
    let raw = fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| fs::read_to_string("/etc/hostname"))
        .unwrap_or_default();
    let name: String = raw
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() { "host".into() } else { name }
}

/// This process, registered as a writer of one dataset folder. Dropping it
/// removes its registration.
#[derive(Debug)]
pub struct Writer {
    id: String,
    lock_path: PathBuf,
    lock: File,
    next: AtomicU64,
}

impl Writer {
    /// Registers this process as a writer of `out` (created if missing).
    pub fn register(out: &Path) -> Result<Writer, String> {
        create_dir(out)?;
        let dir = out.join(STATE_DIR).join("writers");
        create_dir(&dir)?;
        let base = format!("{}-{}", host_name(), std::process::id());
        // Two live processes can share a host name and pid only across pid
        // namespaces on one host name (containers): then take a suffix.
        for k in 0..64u32 {
            let id = if k == 0 {
                base.clone()
            } else {
                format!("{base}-{k}")
            };
            let lock_path = dir.join(format!("{id}.lock"));
            let lock = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_path)
                .map_err(|e| io_error("create", &lock_path, e))?;
            match lock.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => continue,
                Err(TryLockError::Error(e)) => return Err(io_error("lock", &lock_path, e)),
            }
            // A cleaner may have removed the file between our open and our
            // lock (it found the previous owner of this id dead): the lock
            // then guards nothing, so open the path afresh.
            let same = match (lock.metadata(), fs::metadata(&lock_path)) {
                (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
                _ => false,
            };
            if !same {
                continue;
            }
            return Ok(Writer {
                id,
                lock_path,
                lock,
                next: AtomicU64::new(0),
            });
        }
        Err(format!(
            "cannot register as a writer of {}: 64 writers with this host name and process id hold locks in {}",
            out.display(),
            dir.display()
        ))
    }

    /// A temporary name for `path`, in its directory, owned by this writer.
    pub fn temp_path(&self, path: &Path) -> PathBuf {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
        path.with_file_name(format!(".{name}{TEMP_MARK}{}~{n}", self.id))
    }

    /// Writes `text` to `path` atomically.
    pub fn write_text(&self, path: &Path, text: &str) -> Result<(), String> {
        self.write_with(path, |f, tmp| {
            f.write_all(text.as_bytes())
                .map_err(|e| io_error("write", tmp, e))
        })
    }

    /// Writes `path` atomically: `fill` writes the temporary file, which is
    /// then synced and renamed into place (removed if anything fails).
    pub fn write_with(
        &self,
        path: &Path,
        fill: impl FnOnce(&mut File, &Path) -> Result<(), String>,
    ) -> Result<(), String> {
        let dir = path
            .parent()
            .ok_or_else(|| format!("{} has no parent directory", path.display()))?;
        create_dir(dir)?;
        let tmp = self.temp_path(path);
        let result = (|| {
            let mut f = File::create(&tmp).map_err(|e| io_error("create", &tmp, e))?;
            fill(&mut f, &tmp)?;
            f.sync_all().map_err(|e| io_error("sync", &tmp, e))?;
            drop(f);
            self.commit(&tmp, path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// Syncs the finished temporary file `tmp` and renames it to `path`.
    pub fn commit(&self, tmp: &Path, path: &Path) -> Result<(), String> {
        File::open(tmp)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_error("sync", tmp, e))?;
        fs::rename(tmp, path).map_err(|e| io_error("move into place", path, e))
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Unlinked while still locked: a cleaner that opened the file just
        // before finds it unlocked only once every temporary is gone.
        let _ = fs::remove_file(&self.lock_path);
        let _ = self.lock.unlock();
    }
}

/// Whether the writer `id` of `out` is proven dead: its registration is
/// gone, or nobody holds its lock. Removes the registration of a dead
/// writer.
fn writer_is_dead(out: &Path, id: &str) -> bool {
    let path = out
        .join(STATE_DIR)
        .join("writers")
        .join(format!("{id}.lock"));
    let Ok(f) = OpenOptions::new().write(true).open(&path) else {
        return !path.exists();
    };
    match f.try_lock() {
        Ok(()) => {
            let _ = fs::remove_file(&path);
            true
        }
        Err(_) => false,
    }
}

/// The writer id in a temporary file's name, if it is one.
fn temp_owner(name: &str) -> Option<&str> {
    let rest = &name[name.find(TEMP_MARK)? + TEMP_MARK.len()..];
    let (id, n) = rest.rsplit_once('~')?;
    (n.parse::<u64>().is_ok() && !id.is_empty()).then_some(id)
}

/// Removes the temporary files under `out` whose writers are proven dead
/// (killed runs), then the registrations those writers left, so that a
/// folder shared by shards that were killed and started again over weeks
/// does not keep one lock file per dead process; leaves every live
/// writer's alone. Returns how many temporary files it removed.
pub fn remove_stale_temporaries(out: &Path) -> usize {
    let removed = remove_dead_temporaries(out);
    remove_dead_registrations(out);
    removed
}

/// Removes the registration of every writer of `out` that nobody holds.
/// A writer that registers meanwhile checks that its lock still guards
/// the file at its path ([`Writer::register`]), so it never keeps a lock
/// that this removed.
fn remove_dead_registrations(out: &Path) {
    let dir = out.join(STATE_DIR).join("writers");
    let Ok(entries) = fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(id) = name.strip_suffix(".lock") {
            writer_is_dead(out, id);
        }
    }
}

/// The temporary files of [`remove_stale_temporaries`].
fn remove_dead_temporaries(out: &Path) -> usize {
    let mut removed = 0;
    let mut dirs = vec![out.to_path_buf()];
    let mut verdicts: Vec<(String, bool)> = Vec::new();
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                if name != STATE_DIR && dirs.len() < 1_000_000 {
                    dirs.push(entry.path());
                }
                continue;
            }
            let Some(owner) = temp_owner(&name) else {
                continue;
            };
            let dead = match verdicts.iter().find(|(id, _)| id == owner) {
                Some((_, d)) => *d,
                None => {
                    let d = writer_is_dead(out, owner);
                    verdicts.push((owner.to_string(), d));
                    d
                }
            };
            if dead && fs::remove_file(entry.path()).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// Opens (creating) the lock file `OUT/.stormsim/<name>`, not yet locked.
fn lock_file(out: &Path, name: &str) -> Result<(File, PathBuf), String> {
    let dir = out.join(STATE_DIR);
    create_dir(&dir)?;
    let path = dir.join(name);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io_error("create", &path, e))?;
    Ok((file, path))
}

/// Holds `OUT/.stormsim/claim.lock` exclusively while alive: the claim of
/// the manifest is checked and written under it.
pub struct ClaimLock {
    file: File,
}

impl ClaimLock {
    /// Waits for the claim lock of `out`.
    pub fn acquire(out: &Path) -> Result<ClaimLock, String> {
        let (file, path) = lock_file(out, "claim.lock")?;
        file.lock().map_err(|e| io_error("lock", &path, e))?;
        Ok(ClaimLock { file })
    }
}

impl Drop for ClaimLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

/// Writes one file outside a dataset atomically (a temporary name of this
/// process's beside it, synced, then renamed): the calibrated experiment
/// written next to its input.
pub fn write_file(path: &Path, text: &str) -> Result<(), String> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(
        ".{name}{TEMP_MARK}{}-{}",
        host_name(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = File::create(&tmp).map_err(|e| io_error("create", &tmp, e))?;
        f.write_all(text.as_bytes())
            .map_err(|e| io_error("write", &tmp, e))?;
        f.sync_all().map_err(|e| io_error("sync", &tmp, e))?;
        fs::rename(&tmp, path).map_err(|e| io_error("move into place", path, e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Held for the whole of a search (`calibrate`, `boundary`) that rewrites
/// its evaluations table: a second search of the same folder is refused
/// instead of replacing the first one's rows with its own.
#[derive(Debug)]
pub struct SearchLock {
    file: File,
}

impl SearchLock {
    /// Takes the search lock of `out`, or says who holds it.
    pub fn try_acquire(out: &Path, command: &str) -> Result<SearchLock, String> {
        let (file, path) = lock_file(out, "search.lock")?;
        match file.try_lock() {
            Ok(()) => Ok(SearchLock { file }),
            Err(TryLockError::WouldBlock) => Err(format!(
                "another `stormsim {command}` is writing {} (it holds {}); wait for it, or use another --out",
                out.display(),
                path.display()
            )),
            Err(TryLockError::Error(e)) => Err(io_error("lock", &path, e)),
        }
    }
}

impl Drop for SearchLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("stormsim-dataset-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn temporary_names_carry_their_writer() {
        let out = scratch("names");
        let w = Writer::register(&out).unwrap();
        let t = w.temp_path(&out.join("summary").join("part-0.parquet"));
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(".part-0.parquet.tmp~"), "{name}");
        assert_eq!(temp_owner(name), Some(w.id.as_str()));
        assert_eq!(temp_owner(".part-0.parquet.tmp-123"), None);
        drop(w);
        fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn only_dead_writers_temporaries_are_removed() {
        let out = scratch("stale");
        let live = Writer::register(&out).unwrap();
        let cell = out.join("timeseries").join("cell=abc");
        fs::create_dir_all(&cell).unwrap();
        let mine = live.temp_path(&cell.join("part-0.parquet"));
        fs::write(&mine, "live").unwrap();
        // A writer that died: its temporaries stay, its lock is free.
        let dead_lock = out.join(".stormsim/writers/deadhost-1.lock");
        fs::write(&dead_lock, "").unwrap();
        let dead = cell.join(".part-0.parquet.tmp~deadhost-1~0");
        fs::write(&dead, "dead").unwrap();
        // A writer whose registration is gone altogether.
        let gone = cell.join(".part-0.parquet.tmp~gonehost-2~5");
        fs::write(&gone, "gone").unwrap();
        assert_eq!(remove_stale_temporaries(&out), 2);
        assert!(mine.exists());
        assert!(!dead.exists() && !gone.exists() && !dead_lock.exists());
        drop(live);
        assert_eq!(remove_stale_temporaries(&out), 1);
        fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_dead_writers_registration_goes_even_without_temporaries() {
        let out = scratch("registrations");
        let live = Writer::register(&out).unwrap();
        let writers = out.join(".stormsim/writers");
        // A run killed between two files: its lock file, no temporary.
        let dead = writers.join("deadhost-7.lock");
        fs::write(&dead, "").unwrap();
        assert_eq!(remove_stale_temporaries(&out), 0);
        assert!(!dead.exists());
        assert!(
            live.lock_path.exists(),
            "a live writer keeps its registration"
        );
        drop(live);
        assert_eq!(fs::read_dir(&writers).unwrap().count(), 0);
        fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_out_that_is_not_a_directory_is_named() {
        let e = create_dir(Path::new("/dev/null")).unwrap_err();
        assert!(e.contains("/dev/null is not a directory"), "{e}");
    }
}
