#ifndef LATCHKEY_CTSS_SHIM_H
#define LATCHKEY_CTSS_SHIM_H
/* tpm2-tss (Debian libtss2-dev): ESAPI, the TCTI loader, marshalling and error text.
   Imported only by CredentialStore (TPMSeal), which seals the master key to a TPM 2.0. */
#include <tss2/tss2_esys.h>
#include <tss2/tss2_tctildr.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>
#endif
