//! Starting ranks whatever launched them: the rank, world size and rendezvous address from
//! the environment, and the [`UniqueId`] handed from rank 0 to the others over TCP.
//!
//! [`RankEnv::from_env`] reads the variables the common launchers set, in this order:
//!
//! | launcher | rank | world size | local rank |
//! |---|---|---|---|
//! | torchrun (and `torch.distributed.launch`, Slurm scripts written for them) | `RANK` | `WORLD_SIZE` | `LOCAL_RANK` |
//! | Open MPI's `mpirun` | `OMPI_COMM_WORLD_RANK` | `OMPI_COMM_WORLD_SIZE` | `OMPI_COMM_WORLD_LOCAL_RANK` |
//! | MPICH, Intel MPI, Slurm's PMI | `PMI_RANK` | `PMI_SIZE` | `MPI_LOCALRANKID`, `PMI_LOCAL_RANK` |
//!
//! and the rendezvous address from `MASTER_ADDR` (rank 0's host name or address; torchrun
//! sets it, MPI users pass it: `mpirun -x MASTER_ADDR=host0 ...`) and `MASTER_PORT` (default
//! 29500, torchrun's). [`exchange_unique_id`] then has rank 0 create the id and listen on that
//! address, and every other rank connect and fetch it: plain `std::net`, one short
//! length-checked message each way, every wait bounded by the timeout given. The same program
//! runs unchanged with one process per GPU on one host or on several hosts.
//!
//! The exchange is not authenticated: run it on a network the job trusts (as torchrun's and
//! NCCL's own bootstrap are).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::comm::UniqueId;
use crate::error::Result;
pub use crate::launcher::{Launcher, RankEnv, RendezvousError, DEFAULT_PORT};

type RResult<T> = std::result::Result<T, RendezvousError>;

/// The first bytes of every message of the exchange: the protocol and its version.
const MAGIC: [u8; 8] = *b"cdnccl\x00\x01";

/// The unique id of a new communicator of `env.world_size` ranks, the same on every rank:
/// rank 0 creates it ([`UniqueId::new`]) and serves it on `MASTER_ADDR:MASTER_PORT` until
/// every other rank fetched it; the others connect (retrying until rank 0 listens) and fetch
/// it. One rank alone creates it without a socket. Every wait is bounded by `timeout`.
pub fn exchange_unique_id(env: &RankEnv, timeout: Duration) -> Result<UniqueId> {
    if env.world_size == 1 {
        return UniqueId::new();
    }
    let (host, port) = env.master()?;
    if env.rank == 0 {
        let listener = listen(&host, port)?;
        let id = UniqueId::new()?;
        serve_unique_id(&listener, env.world_size, &id, timeout)?;
        Ok(id)
    } else {
        Ok(fetch_unique_id(
            (host.as_str(), port),
            env.world_size,
            env.rank,
            timeout,
        )?)
    }
}

/// A listener on `host:port` (the first of its addresses that binds).
pub fn listen(host: &str, port: u16) -> RResult<TcpListener> {
    let shown = format!("{host}:{port}");
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|source| RendezvousError::Io {
            what: "resolving",
            addr: shown.clone(),
            source,
        })?
        .collect();
    let mut last = None;
    for a in &addrs {
        match TcpListener::bind(a) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(RendezvousError::Io {
        what: "listening on",
        addr: shown,
        source: last.unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address")),
    })
}

/// Rank 0's side: answers every rank `1..world_size` that connects to `listener` with
/// `id`, and returns once each has it. Connections that are not this exchange are answered
/// with an error (or dropped) and do not count; a rank that asks twice, or for another world
/// size, is refused. [`RendezvousError::Timeout`] names the ranks still missing after
/// `timeout`.
pub fn serve_unique_id(
    listener: &TcpListener,
    world_size: usize,
    id: &UniqueId,
    timeout: Duration,
) -> RResult<()> {
    serve_bytes(listener, world_size, &id.to_bytes(), timeout)
}

/// Another rank's side: connects to rank 0 at `addr` (retrying until it listens) and
/// fetches the id, within `timeout`.
pub fn fetch_unique_id(
    addr: impl ToSocketAddrs + std::fmt::Debug,
    world_size: usize,
    rank: usize,
    timeout: Duration,
) -> RResult<UniqueId> {
    fetch_bytes(addr, world_size, rank, timeout).map(UniqueId::from_bytes)
}

/// The payload of the exchange.
type Payload = [u8; UniqueId::BYTES];

/// A rank's request: magic, world size, rank (u32, little endian).
const HELLO_LEN: usize = 16;

/// The answer's status byte.
const OK: u8 = 0;
const REFUSED: u8 = 1;

/// The longest a single connection's read or write may take (bounded by the deadline too).
const IO_STEP: Duration = Duration::from_secs(5);

fn remaining(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

fn serve_bytes(
    listener: &TcpListener,
    world_size: usize,
    payload: &Payload,
    timeout: Duration,
) -> RResult<()> {
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_else(|_| "the listener".into());
    let io = |what, source| RendezvousError::Io {
        what,
        addr: addr.clone(),
        source,
    };
    let deadline = Instant::now() + timeout;
    let mut served = vec![false; world_size];
    served[0] = true;
    listener
        .set_nonblocking(true)
        .map_err(|e| io("configuring", e))?;
    while served.iter().any(|s| !s) {
        let Some(left) = remaining(deadline) else {
            let missing: Vec<String> = (0..world_size)
                .filter(|&r| !served[r])
                .map(|r| r.to_string())
                .collect();
            return Err(RendezvousError::Timeout {
                addr,
                timeout,
                detail: format!("ranks {} never fetched the id", missing.join(", ")),
            });
        };
        match listener.accept() {
            Ok((stream, _)) => {
                // One connection at a time, each bounded: a silent client costs IO_STEP.
                if let Ok(rank) = answer(stream, world_size, &served, payload, left.min(IO_STEP)) {
                    served[rank] = true;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(2).min(left))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(io("accepting on", e)),
        }
    }
    let _ = listener.set_nonblocking(false);
    Ok(())
}

/// Reads one request from `stream` and answers it; the rank served, or why not.
fn answer(
    mut stream: TcpStream,
    world_size: usize,
    served: &[bool],
    payload: &Payload,
    limit: Duration,
) -> io::Result<usize> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(limit))?;
    stream.set_write_timeout(Some(limit))?;
    let mut hello = [0u8; HELLO_LEN];
    stream.read_exact(&mut hello)?;
    if hello[..8] != MAGIC {
        // Not this exchange (a port scan, another program): no answer.
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a rendezvous request",
        ));
    }
    let their_world = u32::from_le_bytes(hello[8..12].try_into().unwrap()) as usize;
    let rank = u32::from_le_bytes(hello[12..16].try_into().unwrap()) as usize;
    let refusal = if their_world != world_size {
        Some(format!(
            "rank 0 has a world of {world_size} ranks, this rank says {their_world}"
        ))
    } else if rank == 0 || rank >= world_size {
        Some(format!(
            "rank {rank} cannot fetch the id: the ranks that fetch it are 1..{world_size}"
        ))
    } else if served[rank] {
        Some(format!(
            "rank {rank} fetched the id already: two processes claim that rank"
        ))
    } else {
        None
    };
    let mut reply = MAGIC.to_vec();
    match &refusal {
        None => {
            reply.push(OK);
            reply.extend_from_slice(payload);
        }
        Some(msg) => {
            reply.push(REFUSED);
            let msg = &msg.as_bytes()[..msg.len().min(u16::MAX as usize)];
            reply.extend_from_slice(&(msg.len() as u16).to_le_bytes());
            reply.extend_from_slice(msg);
        }
    }
    stream.write_all(&reply)?;
    stream.flush()?;
    match refusal {
        None => Ok(rank),
        Some(msg) => Err(io::Error::new(io::ErrorKind::InvalidInput, msg)),
    }
}

fn fetch_bytes(
    addr: impl ToSocketAddrs + std::fmt::Debug,
    world_size: usize,
    rank: usize,
    timeout: Duration,
) -> RResult<Payload> {
    let shown = format!("{addr:?}");
    let deadline = Instant::now() + timeout;
    let (Ok(world), Ok(me)) = (u32::try_from(world_size), u32::try_from(rank)) else {
        return Err(RendezvousError::Protocol {
            addr: shown,
            message: format!("rank {rank} of {world_size} does not fit the exchange"),
        });
    };
    let mut last_error = String::from("no attempt");
    loop {
        let Some(left) = remaining(deadline) else {
            return Err(RendezvousError::Timeout {
                addr: shown,
                timeout,
                detail: format!("rank 0 did not answer (last: {last_error})"),
            });
        };
        let addrs: Vec<SocketAddr> = match addr.to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(e) => {
                // A name that does not resolve yet (rank 0's host still starting): retry.
                last_error = format!("resolving: {e}");
                std::thread::sleep(Duration::from_millis(50).min(left));
                continue;
            }
        };
        for a in &addrs {
            let Some(left) = remaining(deadline) else {
                break;
            };
            match TcpStream::connect_timeout(a, left.min(IO_STEP)) {
                Ok(stream) if connected_to_itself(&stream) => {
                    last_error =
                        format!("connecting to {a}: connected to itself (no listener yet)");
                }
                Ok(stream) => {
                    return exchange(stream, world, me, left.min(IO_STEP)).map_err(|e| match e {
                        Exchange::Refused(message) => RendezvousError::Protocol {
                            addr: shown.clone(),
                            message,
                        },
                        Exchange::Io(source) => RendezvousError::Io {
                            what: "fetching the unique id from",
                            addr: shown.clone(),
                            source,
                        },
                    });
                }
                Err(e) => last_error = format!("connecting to {a}: {e}"),
            }
        }
        if let Some(left) = remaining(deadline) {
            std::thread::sleep(Duration::from_millis(50).min(left));
        }
    }
}

/// Whether `stream` is connected to itself. A connection to a local port that nobody listens
/// on yet may be given that same port as its own (TCP's simultaneous open, possible when the
/// port lies in the ephemeral range): it then reads back what it writes, and holds the port
/// rank 0 is about to listen on. Such a stream is dropped and the connection tried again.
fn connected_to_itself(stream: &TcpStream) -> bool {
    matches!((stream.local_addr(), stream.peer_addr()), (Ok(l), Ok(p)) if l == p)
}

enum Exchange {
    Refused(String),
    Io(io::Error),
}

impl From<io::Error> for Exchange {
    fn from(e: io::Error) -> Exchange {
        Exchange::Io(e)
    }
}

fn exchange(
    mut stream: TcpStream,
    world: u32,
    rank: u32,
    limit: Duration,
) -> std::result::Result<Payload, Exchange> {
    stream.set_read_timeout(Some(limit))?;
    stream.set_write_timeout(Some(limit))?;
    let mut hello = [0u8; HELLO_LEN];
    hello[..8].copy_from_slice(&MAGIC);
    hello[8..12].copy_from_slice(&world.to_le_bytes());
    hello[12..16].copy_from_slice(&rank.to_le_bytes());
    stream.write_all(&hello)?;
    stream.flush()?;
    let mut head = [0u8; 9];
    stream.read_exact(&mut head)?;
    if head[..8] != MAGIC {
        return Err(Exchange::Refused(
            "the answer is not a cuda-driver-nccl rendezvous (another program on that port?)"
                .into(),
        ));
    }
    match head[8] {
        OK => {
            let mut payload = [0u8; UniqueId::BYTES];
            stream.read_exact(&mut payload)?;
            Ok(payload)
        }
        REFUSED => {
            let mut len = [0u8; 2];
            stream.read_exact(&mut len)?;
            let mut msg = vec![0u8; u16::from_le_bytes(len) as usize];
            stream.read_exact(&mut msg)?;
            Err(Exchange::Refused(format!(
                "rank 0 refused: {}",
                String::from_utf8_lossy(&msg)
            )))
        }
        other => Err(Exchange::Refused(format!(
            "unknown answer status {other} (a different version of cuda-driver-nccl?)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn no_launcher_variables_is_no_rank() {
        assert_eq!(RankEnv::from_vars(vars(&[("PATH", "/bin")])).unwrap(), None);
        // Empty values count as unset.
        assert_eq!(RankEnv::from_vars(vars(&[("RANK", "")])).unwrap(), None);
    }

    #[test]
    fn torchrun_variables_are_read() {
        let env = RankEnv::from_vars(vars(&[
            ("RANK", "3"),
            ("WORLD_SIZE", "8"),
            ("LOCAL_RANK", "1"),
            ("MASTER_ADDR", "node0"),
            ("MASTER_PORT", "1234"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            env,
            RankEnv {
                rank: 3,
                world_size: 8,
                local_rank: Some(1),
                master_addr: Some("node0".into()),
                master_port: 1234,
                launcher: Launcher::Torchrun,
            }
        );
        assert_eq!(env.device_ordinal(4), 1);
    }

    #[test]
    fn open_mpi_and_pmi_variables_are_read_and_the_port_defaults() {
        let env = RankEnv::from_vars(vars(&[
            ("OMPI_COMM_WORLD_RANK", "5"),
            ("OMPI_COMM_WORLD_SIZE", "6"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "2"),
            ("MASTER_ADDR", "10.1.2.3"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(env.launcher, Launcher::OpenMpi);
        assert_eq!((env.rank, env.world_size, env.local_rank), (5, 6, Some(2)));
        assert_eq!(env.master_port, DEFAULT_PORT);

        let env = RankEnv::from_vars(vars(&[
            ("PMI_RANK", "1"),
            ("PMI_SIZE", "2"),
            ("MPI_LOCALRANKID", "1"),
            ("MASTER_ADDR", "h"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(env.launcher, Launcher::Pmi);
        assert_eq!(env.local_rank, Some(1));
        // Without a local rank, the rank picks the device.
        let env = RankEnv::from_vars(vars(&[
            ("PMI_RANK", "5"),
            ("PMI_SIZE", "6"),
            ("MASTER_ADDR", "h"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(env.device_ordinal(4), 1);
        assert_eq!(env.device_ordinal(0), 0);
    }

    #[test]
    fn torchrun_variables_win_over_mpi_ones() {
        let env = RankEnv::from_vars(vars(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "1"),
            ("OMPI_COMM_WORLD_RANK", "7"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(env.launcher, Launcher::Torchrun);
        assert_eq!((env.rank, env.world_size, env.master_addr), (0, 1, None));
    }

    #[test]
    fn incomplete_or_garbage_variables_are_clear_errors() {
        let e = RankEnv::from_vars(vars(&[("RANK", "0")])).unwrap_err();
        assert!(e.to_string().starts_with("WORLD_SIZE is not set"), "{e}");
        let e = RankEnv::from_vars(vars(&[("RANK", "x"), ("WORLD_SIZE", "2")])).unwrap_err();
        assert_eq!(e.to_string(), "RANK=\"x\" is not a number");
        let e = RankEnv::from_vars(vars(&[("RANK", "2"), ("WORLD_SIZE", "2")])).unwrap_err();
        assert!(e.to_string().contains("rank 2 is out of range"), "{e}");
        let e = RankEnv::from_vars(vars(&[("RANK", "0"), ("WORLD_SIZE", "0")])).unwrap_err();
        assert!(e.to_string().contains("positive"), "{e}");
        let e = RankEnv::from_vars(vars(&[("RANK", "0"), ("WORLD_SIZE", "2")])).unwrap_err();
        assert!(e.to_string().starts_with("MASTER_ADDR is not set"), "{e}");
        let e = RankEnv::from_vars(vars(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "h"),
            ("MASTER_PORT", "99999"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("TCP port"), "{e}");
        let e = RankEnv::from_vars(vars(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "18446744073709551616"),
        ]))
        .unwrap_err();
        assert!(e.to_string().contains("not a number"), "{e}");
    }

    fn payload(seed: u8) -> Payload {
        let mut p = [0u8; UniqueId::BYTES];
        for (i, b) in p.iter_mut().enumerate() {
            *b = seed.wrapping_add(i as u8).wrapping_mul(31);
        }
        p
    }

    const T: Duration = Duration::from_secs(20);

    #[test]
    fn every_rank_fetches_rank_0_s_bytes_over_loopback() {
        let listener = listen("127.0.0.1", 0).unwrap();
        let port = listener.local_addr().unwrap().port();
        let p = payload(7);
        let world = 4;
        let fetchers: Vec<_> = (1..world)
            .map(|rank| {
                std::thread::spawn(move || fetch_bytes(("127.0.0.1", port), world, rank, T))
            })
            .collect();
        serve_bytes(&listener, world, &p, T).unwrap();
        for f in fetchers {
            assert_eq!(f.join().unwrap().unwrap(), p);
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_rank_that_starts_before_rank_0_listens_retries() {
        // A socket bound to a port the kernel picks but not listening yet: connections to it
        // are refused, and no other connection can take the port meanwhile.
        let (fd, port) = c_socket::bound();
        let fetcher = std::thread::spawn(move || fetch_bytes(("127.0.0.1", port), 2, 1, T));
        std::thread::sleep(Duration::from_millis(200));
        let listener = c_socket::listening(fd);
        let p = payload(9);
        serve_bytes(&listener, 2, &p, T).unwrap();
        assert_eq!(fetcher.join().unwrap().unwrap(), p);
    }

    /// The C socket calls that std does not offer (binding without listening, binding before
    /// connecting), for sockets on 127.0.0.1 at a port the kernel picks.
    #[cfg(target_os = "linux")]
    mod c_socket {
        use std::net::{TcpListener, TcpStream};
        use std::os::fd::FromRawFd;

        #[repr(C)]
        struct SockaddrIn {
            family: u16,
            port: [u8; 2],
            addr: [u8; 4],
            zero: [u8; 8],
        }

        extern "C" {
            fn socket(domain: i32, ty: i32, protocol: i32) -> i32;
            fn bind(fd: i32, addr: *const SockaddrIn, len: u32) -> i32;
            fn getsockname(fd: i32, addr: *mut SockaddrIn, len: *mut u32) -> i32;
            fn connect(fd: i32, addr: *const SockaddrIn, len: u32) -> i32;
            fn listen(fd: i32, backlog: i32) -> i32;
        }

        const LEN: u32 = size_of::<SockaddrIn>() as u32;

        /// A TCP socket bound to 127.0.0.1 at a port the kernel picks, not listening, and its
        /// address.
        fn bound_addr() -> (i32, SockaddrIn) {
            let mut addr = SockaddrIn {
                family: 2, // AF_INET
                port: [0; 2],
                addr: [127, 0, 0, 1],
                zero: [0; 8],
            };
            let mut len = LEN;
            // SAFETY: plain socket calls on a descriptor this function creates; `addr` is a
            // valid sockaddr_in of `len` bytes, which getsockname overwrites with the bound
            // address.
            let fd = unsafe {
                let fd = socket(2, 1, 0); // AF_INET, SOCK_STREAM
                assert!(fd >= 0);
                assert_eq!(bind(fd, &addr, len), 0);
                assert_eq!(getsockname(fd, &mut addr, &mut len), 0);
                fd
            };
            assert_ne!(addr.port, [0; 2]);
            (fd, addr)
        }

        /// A bound socket that does not listen yet (its descriptor) and its port.
        pub(super) fn bound() -> (i32, u16) {
            let (fd, addr) = bound_addr();
            (fd, u16::from_be_bytes(addr.port))
        }

        /// Makes a socket from [`bound`] listen, as a `TcpListener` that owns it.
        pub(super) fn listening(fd: i32) -> TcpListener {
            // SAFETY: `fd` is a bound socket that nothing else owns; the listener closes it.
            unsafe {
                assert_eq!(listen(fd, 16), 0);
                TcpListener::from_raw_fd(fd)
            }
        }

        /// A TCP connection of a socket to its own address: the simultaneous open that a
        /// retrying rank can run into.
        pub(super) fn self_connected() -> TcpStream {
            let (fd, addr) = bound_addr();
            // SAFETY: `fd` is a bound socket this function owns; `addr` its address; the
            // stream closes it.
            unsafe {
                assert_eq!(
                    connect(fd, &addr, LEN),
                    0,
                    "a socket connects to its own address"
                );
                TcpStream::from_raw_fd(fd)
            }
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_connection_to_itself_is_told_from_one_to_a_listener() {
        let looped = c_socket::self_connected();
        assert!(connected_to_itself(&looped));
        // What it writes, it reads: the exchange would take its own hello for rank 0's.
        (&looped).write_all(b"hello").unwrap();
        let mut back = [0u8; 5];
        (&looped).read_exact(&mut back).unwrap();
        assert_eq!(&back, b"hello");
        drop(looped);
        let listener = listen("127.0.0.1", 0).unwrap();
        let real = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert!(!connected_to_itself(&real));
    }

    #[test]
    fn a_wrong_world_size_or_a_duplicate_rank_is_refused_and_the_exchange_goes_on() {
        let listener = listen("127.0.0.1", 0).unwrap();
        let port = listener.local_addr().unwrap().port();
        let p = payload(3);
        let server = std::thread::spawn(move || serve_bytes(&listener, 3, &p, T));
        let e = fetch_bytes(("127.0.0.1", port), 5, 1, T).unwrap_err();
        assert!(
            e.to_string()
                .contains("rank 0 has a world of 3 ranks, this rank says 5"),
            "{e}"
        );
        let e = fetch_bytes(("127.0.0.1", port), 3, 0, T).unwrap_err();
        assert!(e.to_string().contains("cannot fetch"), "{e}");
        assert_eq!(fetch_bytes(("127.0.0.1", port), 3, 1, T).unwrap(), p);
        let e = fetch_bytes(("127.0.0.1", port), 3, 1, T).unwrap_err();
        assert!(e.to_string().contains("fetched the id already"), "{e}");
        assert_eq!(fetch_bytes(("127.0.0.1", port), 3, 2, T).unwrap(), p);
        server.join().unwrap().unwrap();
    }

    #[test]
    fn garbage_connections_do_not_count_or_stop_the_server() {
        let listener = listen("127.0.0.1", 0).unwrap();
        let port = listener.local_addr().unwrap().port();
        let p = payload(5);
        let server = std::thread::spawn(move || serve_bytes(&listener, 2, &p, T));
        // Garbage, then a connection closed at once, then a short write.
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(&[0xAB; 64]).unwrap();
        drop(s);
        drop(TcpStream::connect(("127.0.0.1", port)).unwrap());
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(&MAGIC).unwrap();
        drop(s);
        assert_eq!(fetch_bytes(("127.0.0.1", port), 2, 1, T).unwrap(), p);
        server.join().unwrap().unwrap();
    }

    #[test]
    fn a_server_that_is_not_rank_0_is_a_protocol_error() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut hello = [0u8; HELLO_LEN];
            s.read_exact(&mut hello).unwrap();
            s.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").unwrap();
        });
        let e = fetch_bytes(("127.0.0.1", port), 2, 1, T).unwrap_err();
        assert!(
            e.to_string().contains("not a cuda-driver-nccl rendezvous"),
            "{e}"
        );
        server.join().unwrap();
    }

    #[test]
    fn waits_are_bounded_on_both_sides() {
        // Nobody listens: the fetcher gives up after its timeout, naming the last failure.
        let port = listen("127.0.0.1", 0).unwrap().local_addr().unwrap().port();
        let e = fetch_bytes(("127.0.0.1", port), 2, 1, Duration::from_millis(300)).unwrap_err();
        assert!(
            matches!(e, RendezvousError::Timeout { .. }) && e.to_string().contains("connecting"),
            "{e}"
        );
        // Nobody comes: rank 0 gives up, naming the missing ranks.
        let listener = listen("127.0.0.1", 0).unwrap();
        let e = serve_bytes(&listener, 3, &payload(1), Duration::from_millis(300)).unwrap_err();
        assert!(
            e.to_string().contains("ranks 1, 2 never fetched the id"),
            "{e}"
        );
        // A client that connects and says nothing costs the server one bounded read.
        let listener = listen("127.0.0.1", 0).unwrap();
        let port = listener.local_addr().unwrap().port();
        let _silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let e = serve_bytes(&listener, 2, &payload(1), Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, RendezvousError::Timeout { .. }), "{e}");
    }

    #[test]
    fn listening_on_an_address_of_another_host_is_a_clear_error() {
        // TEST-NET-1: never an address of this machine, so the bind fails (nothing is sent).
        let e = listen("192.0.2.1", 29999).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("rendezvous: listening on 192.0.2.1:29999: "),
            "{e}"
        );
    }

    #[test]
    fn one_rank_needs_no_address() {
        let env = RankEnv::from_vars(vars(&[("RANK", "0"), ("WORLD_SIZE", "1")]))
            .unwrap()
            .unwrap();
        assert!(env.master().is_err());
    }
}
