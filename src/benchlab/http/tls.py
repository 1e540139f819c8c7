"""A certificate authority and a server certificate made per run (no network, no files
outside the run's directory): every TLS server of the run presents the certificate, every
client trusts the authority."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from benchlab.system.safe_files import new_dir, new_file


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the authority's certificate, PEM: what clients trust
    cert: Path  # the server's certificate, PEM
    key: Path  # its private key, PEM, PKCS#8 (granian accepts nothing else)


def make_certificates(
    directory: Path, addresses: tuple[str, ...], key_owner: str | None = None
) -> TlsFiles:
    """An ECDSA P-256 authority and a server certificate for `addresses` (IPs) and
    localhost, valid for a day, in a new `directory`; the key readable by its owner only
    from its creation (`key_owner`: the user the servers run as)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.UTC)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=1)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    usages = dict.fromkeys(
        ("content_commitment", "key_encipherment", "data_encipherment", "key_agreement",
         "encipher_only", "decipher_only"),
        False,
    )  # fmt: skip
    signing_only = x509.KeyUsage(
        digital_signature=True, key_cert_sign=True, crl_sign=True, **usages
    )
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "benchlab run CA")])
    ca = (
        x509.CertificateBuilder(
            subject_name=ca_name, issuer_name=ca_name, not_valid_before=start, not_valid_after=end
        )
        .serial_number(x509.random_serial_number())
        .public_key(ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(signing_only, critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    names: list[x509.GeneralName] = [x509.DNSName("localhost")]
    names += [x509.IPAddress(ipaddress.ip_address(a)) for a in dict.fromkeys(addresses)]
    cert = (
        x509.CertificateBuilder(
            subject_name=x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "benchlab server")]),
            issuer_name=ca_name,
            not_valid_before=start,
            not_valid_after=end,
        )
        .serial_number(x509.random_serial_number())
        .public_key(key.public_key())
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    new_dir(directory, 0o711)
    files = TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server.key")
    new_file(files.ca, ca.public_bytes(serialization.Encoding.PEM), 0o644)
    new_file(files.cert, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    new_file(files.key, pem, 0o600, owner=key_owner)
    return files
