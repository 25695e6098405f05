#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| ehds_fuzz::fhir_bundle(data));
