// Texture and surface object kernels for cuda-driver's GPU tests and the texture examples.
// Every kernel takes its texture or surface object as a 64-bit handle
// (cudaTextureObject_t / cudaSurfaceObject_t), one thread per output element.

// out[y * w + x] = tex2D(tex, x + 0.5, y + 0.5): every texel, unnormalised coordinates.
extern "C" __global__ void tex_fetch_2d(cudaTextureObject_t tex, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        out[y * w + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
    }
}

// out[i] = tex2D(tex, u[i], v[i]): samples at arbitrary (unnormalised or normalised)
// coordinates, for filtering, address modes and border colours.
extern "C" __global__ void tex_sample_2d(cudaTextureObject_t tex, const float* u, const float* v,
                                         float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2D<float>(tex, u[i], v[i]);
    }
}

// out[i] = tex1Dfetch(tex, i): a texture over linear memory.
extern "C" __global__ void tex_fetch_linear(cudaTextureObject_t tex, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex1Dfetch<float>(tex, i);
    }
}

// out[i] = tex2D<int>(tex, i + 0.5, 0.5): an integer texture read as integers.
extern "C" __global__ void tex_fetch_int(cudaTextureObject_t tex, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2D<int>(tex, i + 0.5f, 0.5f);
    }
}

// simpleTexture's transformKernel: rotates the image by `theta` around its centre, sampling
// with normalised coordinates (and the texture's filtering and address mode).
extern "C" __global__ void tex_rotate(cudaTextureObject_t tex, float* out, int w, int h,
                                      float theta)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float u = (float)x / (float)w - 0.5f;
        float v = (float)y / (float)h - 0.5f;
        float tu = u * cosf(theta) - v * sinf(theta) + 0.5f;
        float tv = v * cosf(theta) + u * sinf(theta) + 0.5f;
        out[y * w + x] = tex2D<float>(tex, tu, tv);
    }
}

// simpleLayeredTexture's transformKernel: out = -texel + layer, per layer (normalised
// coordinates at texel centres).
extern "C" __global__ void tex_layered(cudaTextureObject_t tex, float* out, int w, int h,
                                       int layers)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float u = (x + 0.5f) / (float)w;
        float v = (y + 0.5f) / (float)h;
        for (int layer = 0; layer < layers; ++layer) {
            out[layer * w * h + y * w + x] = -tex2DLayered<float>(tex, u, v, layer) + layer;
        }
    }
}

// out[f] = texCubemap(tex, direction of face f's centre), f = 0..6 (+x, -x, +y, -y, +z, -z).
extern "C" __global__ void tex_cubemap_faces(cudaTextureObject_t tex, float* out)
{
    int f = threadIdx.x;
    if (f < 6) {
        float d[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
        out[f] = texCubemap<float>(tex, d[f][0], d[f][1], d[f][2]);
    }
}

// out[l] = tex2DLod(tex, 0.5, 0.5, l) for l < levels: a mipmapped texture's levels.
extern "C" __global__ void tex_lod(cudaTextureObject_t tex, float* out, int levels)
{
    int l = threadIdx.x;
    if (l < levels) {
        out[l] = tex2DLod<float>(tex, 0.5f, 0.5f, (float)l);
    }
}

// Writes (y * w + x) * scale to every element of a float surface.
extern "C" __global__ void surf_write_2d(cudaSurfaceObject_t surf, int w, int h, float scale)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        surf2Dwrite((float)(y * w + x) * scale, surf, x * (int)sizeof(float), y);
    }
}

// simpleSurfaceWrite's kernel: reads each element through the surface and writes it back
// multiplied by `factor`.
extern "C" __global__ void surf_scale_2d(cudaSurfaceObject_t surf, int w, int h, float factor)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) {
        float v;
        surf2Dread(&v, surf, x * (int)sizeof(float), y);
        surf2Dwrite(v * factor, surf, x * (int)sizeof(float), y);
    }
}

// out[i] = tex2D<unsigned char>(tex, i + 0.5, 0.5): an 8-bit texture read as integers
// (CU_TRSF_READ_AS_INTEGER), widened to 32 bits.
extern "C" __global__ void tex_fetch_u8(cudaTextureObject_t tex, unsigned int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = tex2D<unsigned char>(tex, i + 0.5f, 0.5f);
    }
}

// out[4 i .. 4 i + 4] = tex2D<float4>(tex, u[i], v[i]): a four-channel texture read as
// floats (normalised 8-bit channels, sRGB conversion, border colours).
extern "C" __global__ void tex_sample_2d_rgba(cudaTextureObject_t tex, const float* u,
                                              const float* v, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float4 t = tex2D<float4>(tex, u[i], v[i]);
        out[4 * i + 0] = t.x;
        out[4 * i + 1] = t.y;
        out[4 * i + 2] = t.z;
        out[4 * i + 3] = t.w;
    }
}

// out[4 i .. 4 i + 4] = tex2Dgather<float4>(tex, u[i], v[i], comp): channel `comp` of the
// four texels bilinear filtering at (u, v) would use.
extern "C" __global__ void tex_gather_2d(cudaTextureObject_t tex, const float* u, const float* v,
                                         float* out, int n, int comp)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float4 t = tex2Dgather<float4>(tex, u[i], v[i], comp);
        out[4 * i + 0] = t.x;
        out[4 * i + 1] = t.y;
        out[4 * i + 2] = t.z;
        out[4 * i + 3] = t.w;
    }
}
