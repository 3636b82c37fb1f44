//! NCCL collectives over `cuda-driver`'s device memory and streams: the step from one GPU to
//! many GPUs on one host or many hosts.
//!
//! [NCCL](https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/index.html) is the
//! communication library under PyTorch, JAX and the other multi-GPU stacks; it runs over
//! NVLink, PCIe, InfiniBand and TCP. This crate binds NCCL 2.x:
//!
//! * [`sys`]: the raw bindings of `nccl.h` (of the pinned `nvidia-nccl-cu13` wheel,
//!   2.28.9), generated and committed, C names untouched.
//! * [`Nccl`]: the library, loaded at run time from the path the program gives, the file
//!   `CUDA_DRIVER_NCCL_LIBRARY` names, the pip wheel (`nvidia-nccl-cu13`) of a virtual
//!   environment or of `python3`, or the system's loader; any NCCL 2.x. When none loads, the
//!   error lists every place tried and why.
//! * [`Communicator`]: one rank of a communicator, created from a [`UniqueId`] one rank
//!   makes and the program distributes ([`Communicator::init_rank`], one rank per process), or
//!   for several devices of one process ([`Communicator::init_all`]); split, finalized,
//!   destroyed or aborted.
//! * The collectives on `cuda-driver` views and streams, typed by [`Element`]:
//!   [`all_reduce`](Communicator::all_reduce), [`broadcast`](Communicator::broadcast),
//!   [`reduce`](Communicator::reduce), [`all_gather`](Communicator::all_gather),
//!   [`reduce_scatter`](Communicator::reduce_scatter) (each also in place), and
//!   [`send`](Communicator::send)/[`recv`](Communicator::recv); several at once in a
//!   [`Group`].
//! * [`rendezvous`]: the rank, world size and rendezvous address from the variables torchrun
//!   and MPI launchers set, and the unique id handed out over TCP, so one program runs with
//!   one process per GPU on one host or on several.
//!
//! ```no_run
//! use std::time::Duration;
//! use cuda_driver::prelude::*;
//! use cuda_driver::{Device, DeviceBuffer, Stream, types::StreamFlags};
//! use cuda_driver_nccl::rendezvous::{exchange_unique_id, RankEnv};
//! use cuda_driver_nccl::{CommConfig, Communicator, ReduceOp};
//!
//! // Started by torchrun, mpirun or srun: one process per GPU.
//! let env = RankEnv::from_env()?.expect("started by a launcher");
//! let dev = Device::get(env.device_ordinal(Device::count()?))?;
//! let ctx = dev.primary_context()?;
//! let stream = Stream::new(&ctx, StreamFlags::NON_BLOCKING)?;
//! let id = exchange_unique_id(&env, Duration::from_secs(120))?;
//! let config = CommConfig::new().timeout(Duration::from_secs(120));
//! let comm = Communicator::init_rank(&ctx, env.world_size, env.rank, &id, &config)?;
//!
//! let mut grads = DeviceBuffer::from_slice(&ctx, &vec![1.0f32; 1 << 20])?;
//! comm.all_reduce_in_place(&mut grads.as_view_mut(), ReduceOp::SUM, &stream)?;
//! comm.synchronize(&stream)?; // an error, not a hang, when a peer dies
//! assert_eq!(grads.to_vec()?[0], env.world_size as f32);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Soundness: the same rules as `cuda-driver`'s stream operations
//!
//! A collective is queued on a [`Stream`](cuda_driver::Stream) like an async copy, and checked
//! like one, before NCCL is called ([`cuda_driver::external`]):
//!
//! * the stream, and every view, belong to the communicator's context
//!   (`ContextMismatch`), which is its device's primary context ([`Error::NotPrimaryContext`]:
//!   NCCL works through the CUDA runtime, whose context is the primary one);
//! * memory ordered on a stream (`AsyncDeviceBuffer`, managed memory, the device view of
//!   page-locked memory) is used on that stream only (`StreamMismatch`): it is freed in stream
//!   order there, after the collective;
//! * lengths agree (`LengthMismatch`: an all-gather receives `size()` times what it sends),
//!   ranks are in range;
//! * memory that is not stream-ordered may be dropped right after the call: its release waits
//!   for the work of its context, NCCL's kernels included (`docs/SOUNDNESS.md`, M2);
//! * in a [`Group`], NCCL queues the work only at the group's end: the group holds its views,
//!   streams and communicators for its whole life (a `compile_fail` test shows a buffer cannot
//!   be dropped before), and operations outside the group are refused meanwhile
//!   ([`Error::InGroup`]).
//!
//! Every NCCL call runs with the communicator's context current and leaves the caller's
//! context stack as it found it, also where NCCL's runtime switched devices.
//!
//! # A peer that dies
//!
//! NCCL's operations wait for their peers. A communicator created with a
//! [timeout](CommConfig::timeout) is non-blocking: every call returns at once and is polled
//! (`ncclCommGetAsyncError`) until it completes; [`Communicator::synchronize`] waits for a
//! stream the same way. An asynchronous error (a peer's process died, its connection broke)
//! or the timeout aborts the communicator (`ncclCommAbort`, which stops its GPU work) and
//! returns [`Error::Async`] or [`Error::Timeout`]; afterwards it only returns
//! [`Error::Aborted`].
//!
//! # NVLink multicast stays off
//!
//! Before the first NCCL library is loaded the crate sets `NCCL_NVLS_ENABLE=0` in the
//! process's environment (overriding any other value, with a `log` warning), and it calls no
//! multicast function. NVLS (NVLink SHARP) is NCCL's use of NVLink multicast objects; on hosts
//! whose GPUs are shared, a multicast call that goes wrong can put the GPUs out of service for
//! everyone until the host is reset. Set the variable yourself before starting threads if the
//! program reads its environment from other threads (the crate sets it on the thread that
//! first loads NCCL).

#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod collective;
mod comm;
mod config;
mod element;
mod error;
mod group;
mod launcher;
mod library;
mod load;
pub mod rendezvous;
mod scope;
pub mod sys;
mod version;

pub use comm::{Communicator, UniqueId};
pub use config::CommConfig;
pub use element::{DataType, Element, ReduceOp};
pub use error::{drop_error_count, Error, NcclResult, Result};
pub use group::Group;
pub use library::{Nccl, NVLS_VAR};
pub use load::{Attempt, LoadError, LIBRARY_VAR};
pub use rendezvous::RendezvousError;
pub use version::Version;
