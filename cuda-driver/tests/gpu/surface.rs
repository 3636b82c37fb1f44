//! GPU tests: surface objects (Surface Object Management): surfaces write arrays, and need
//! the array's surface flag.

use cuda_driver::memory::LayoutError;
use cuda_driver::{memory::Array, surface::SurfaceObject, types::Array3DFlags, Error, Module};

use crate::common::{grid2, still_usable, stream, TEX_KERNELS};

#[gpu_test]
fn surfaces_write_arrays_and_need_the_flag() {
    let ctx = gpu_or_skip!();
    let module = Module::load_data(&ctx, TEX_KERNELS).unwrap();
    let s = stream(&ctx);
    let (w, h) = (37usize, 21usize);
    let arr = Array::<f32>::new_2d(&ctx, w, h, Array3DFlags::SURFACE_LDST).unwrap();
    {
        let surf = SurfaceObject::new(&arr).unwrap();
        let f = module.function("surf_write_2d").unwrap();
        let (wi, hi, scale) = (w as i32, h as i32, 0.5f32);
        // SAFETY: surf_write_2d(surf, int, int, float) writes the w x h array.
        unsafe { f.launch(&s, &grid2(w, h), (&surf, &wi, &hi, &scale)) }.unwrap();
        s.synchronize().unwrap();
        assert_eq!(
            surf.resource_desc().unwrap().resType,
            cuda_driver::sys::CU_RESOURCE_TYPE_ARRAY
        );
    }
    let mut back = vec![0.0f32; w * h];
    arr.copy_to_host(&mut back).unwrap();
    for (i, &v) in back.iter().enumerate() {
        assert_eq!(v, i as f32 * 0.5, "element {i}");
    }
    let plain = Array::<f32>::new_2d(&ctx, 4, 4, Array3DFlags::empty()).unwrap();
    assert!(matches!(
        SurfaceObject::new(&plain),
        Err(Error::Layout(LayoutError::MissingArrayFlag { .. }))
    ));
    still_usable(&ctx);
}
