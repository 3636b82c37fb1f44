// xtask-nvcc: -rdc=true
//
// The other half of link_main.cu: the device function its kernel scale_add calls. Compiled
// as relocatable device code, so helper_op stays an externally visible `.visible .func`
// (a whole-program compile would drop it as unused).

// helper_op(x, s) = x * s + 1.0f
extern "C" __device__ float helper_op(float x, float s)
{
    return x * s + 1.0f;
}
