//! CPU use from `/proc` (Linux), shared by the benches: how many cores this process, the
//! PostgreSQL server and everything else used during a measurement, so a run taken while other
//! jobs competed for the CPUs can be recognised and set aside.

/// CPU time counters from `/proc` (Linux), in clock ticks: the whole machine, this process (the
/// gateway and the load generator together), and the PostgreSQL server processes.
#[derive(Clone, Copy, Default)]
pub struct CpuSnapshot {
    pub machine_busy: u64,
    pub machine_total: u64,
    pub this_process: u64,
    pub postgres: u64,
}

/// Average cores used during a measurement by this process, by PostgreSQL, and by everything
/// else on the machine (other builds or jobs competing for the CPUs).
#[derive(Clone, Copy, Default)]
pub struct CpuUse {
    pub this_process: f64,
    pub postgres: f64,
    pub other: f64,
}

fn process_ticks(stat: &str) -> Option<u64> {
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Busy and total CPU ticks of the whole machine since boot (`/proc/stat`).
pub fn machine_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|x| x.parse().ok())
        .collect();
    (v.len() == 8).then(|| {
        let total: u64 = v.iter().sum();
        (total - v[3] - v[4], total)
    })
}

/// CPU ticks of this process, all its threads, dead ones included.
pub fn self_ticks() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| process_ticks(&s))
        .unwrap_or(0)
}

/// CPU ticks of process `pid`, all its threads (0 once it has gone).
#[allow(dead_code)] // not every bench runs a second process
pub fn pid_ticks(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| process_ticks(&s))
        .unwrap_or(0)
}

/// CPU ticks of this process's live threads whose name starts with `prefix` (a thread that
/// exited is no longer counted, so the threads measured must live through the measurement).
#[allow(dead_code)] // not every bench splits its process by thread
pub fn thread_ticks(prefix: &str) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix))
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|s| process_ticks(&s))
        .sum()
}

pub fn cpu_snapshot() -> CpuSnapshot {
    let mut snap = CpuSnapshot::default();
    if let Some((busy, total)) = machine_ticks() {
        snap.machine_busy = busy;
        snap.machine_total = total;
    }
    snap.this_process = self_ticks();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let is_pid = entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()));
            if !is_pid {
                continue;
            }
            let path = entry.path();
            let is_postgres =
                std::fs::read_to_string(path.join("comm")).is_ok_and(|c| c.trim() == "postgres");
            if is_postgres {
                if let Some(t) = std::fs::read_to_string(path.join("stat"))
                    .ok()
                    .and_then(|s| process_ticks(&s))
                {
                    snap.postgres += t;
                }
            }
        }
    }
    snap
}

impl CpuSnapshot {
    /// Cores used since `before`: ticks of each kind over all ticks, times the number of CPUs.
    pub fn since(&self, before: &CpuSnapshot) -> CpuUse {
        let total = self.machine_total.saturating_sub(before.machine_total);
        if total == 0 {
            return CpuUse::default();
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        let cores = |ticks: u64| ticks as f64 / total as f64 * cpus;
        let busy = self.machine_busy.saturating_sub(before.machine_busy);
        let this_process = self.this_process.saturating_sub(before.this_process);
        let postgres = self.postgres.saturating_sub(before.postgres);
        CpuUse {
            this_process: cores(this_process),
            postgres: cores(postgres),
            other: cores(busy.saturating_sub(this_process + postgres)),
        }
    }
}
