// Kernels for the typed-launcher example (cuda-driver-examples/examples/typed_launch.rs). C++
// linkage on purpose: the PTX entry names are mangled with the parameter types, from which
// cuda-driver-build generates typed launchers.

// An affine map and the element count, passed by value (16 bytes, 4-byte aligned):
// Rust's `#[repr(C)] struct Affine { scale: f32, offset: f32, n: i32, stride: i32 }`.
struct Affine {
    float scale;
    float offset;
    int n;
    int stride;
};

// out[i * p.stride] = in[i * p.stride] * p.scale + p.offset for i < p.n.
template <typename T>
__global__ void affine(Affine p, const T* in, T* out)
{
    int i = blockDim.x * blockIdx.x + threadIdx.x;
    if (i < p.n) {
        long long j = (long long)i * p.stride;
        out[j] = in[j] * (T)p.scale + (T)p.offset;
    }
}

template __global__ void affine<float>(Affine, const float*, float*);
template __global__ void affine<double>(Affine, const double*, double*);
