//! The attributes of [`cuda-driver-test-harness`](../cuda_driver_test_harness/index.html),
//! re-exported there: use them through that crate.

use proc_macro::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

/// Marks a GPU test: `#[gpu_test] fn name() { .. }`, in place of `#[test]`.
///
/// Keeps the function and registers it (with `inventory`) as a test named
/// `<module path without the crate>::<name>`, as libtest would name it. `#[cfg(..)]`
/// attributes of the function apply to the registration too.
#[proc_macro_attribute]
pub fn gpu_test(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let attr = proc_macro2::TokenStream::from(attr);
        return quote_spanned!(attr.span()=> compile_error!("#[gpu_test] takes no arguments");)
            .into();
    }
    let f = syn::parse_macro_input!(item as syn::ItemFn);
    let sig = &f.sig;
    if !sig.inputs.is_empty()
        || !matches!(sig.output, syn::ReturnType::Default)
        || !sig.generics.params.is_empty()
        || sig.asyncness.is_some()
        || sig.unsafety.is_some()
    {
        return quote_spanned!(sig.span()=>
            compile_error!("a #[gpu_test] is a plain `fn name()`: no arguments, no return value, \
                            not async, not unsafe, not generic");
        )
        .into();
    }
    let name = &sig.ident;
    let cfgs = f.attrs.iter().filter(|a| a.path().is_ident("cfg"));
    quote! {
        #f
        #(#cfgs)*
        ::cuda_driver_test_harness::inventory::submit! {
            ::cuda_driver_test_harness::Test::new(
                ::core::module_path!(),
                ::core::stringify!(#name),
                #name,
            )
        }
    }
    .into()
}

/// Stands in for libtest's `#[test]` in the GPU test binaries, which run without libtest
/// (`harness = false` compiles `#[test]` functions out): a `#[test]` there would never run,
/// so it is a compile error that names the marker to use.
#[proc_macro_attribute]
pub fn test(_attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    quote_spanned!(item.span()=>
        compile_error!("this test binary runs on cuda-driver-test-harness: mark the test \
                        #[gpu_test] instead of #[test] (a #[test] would never run)");
    )
    .into()
}
