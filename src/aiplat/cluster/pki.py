"""Certificates for one lab cluster run, made with ``cryptography``: a CA, the API server's
serving certificate, an admin client certificate (group ``system:masters``), the service
account signing key, and serving certificates for the webhooks Kueue and JobSet run on
127.0.0.1. ECDSA P-256 keeps generation to milliseconds. Everything is written 0600 into
the run's own folder and removed with it by ``down``.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from aiplat.fsutil import atomic_write

VALID_DAYS = 30
# The first address of --service-cluster-ip-range: the in-cluster 'kubernetes' Service.
SERVICE_IP = "10.96.0.1"
SERVICE_CIDR = "10.96.0.0/16"


@dataclass(frozen=True)
class Pki:
    dir: Path

    def path(self, name: str) -> Path:
        return self.dir / name

    @property
    def ca(self) -> Path:
        return self.path("ca.crt")


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey
             ) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=VALID_DAYS)))


def _leaf(ca_key: ec.EllipticCurvePrivateKey, ca_name: x509.Name, cn: str, *,
          org: str | None = None, dns: tuple[str, ...] = (), ips: tuple[str, ...] = (),
          server: bool) -> tuple[bytes, bytes]:
    key = _key()
    b = _builder(_name(cn, org), ca_name, key)
    b = b.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    b = b.add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False,
                                      content_commitment=False, data_encipherment=False,
                                      key_agreement=False, key_cert_sign=False, crl_sign=False,
                                      encipher_only=False, decipher_only=False), critical=True)
    usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
    b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if dns or ips:
        names: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
        names += [x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
        b = b.add_extension(x509.SubjectAlternativeName(names), critical=False)
    cert = b.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


def make_pki(folder: Path) -> Pki:
    """Write a fresh CA and every certificate a run needs into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    ca_key = _key()
    ca_name = _name("aiplat-lab-cluster-ca")
    ca = (_builder(ca_name, ca_name, ca_key)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_encipherment=False,
                                       content_commitment=False, data_encipherment=False,
                                       key_agreement=False, key_cert_sign=True, crl_sign=True,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    files: dict[str, bytes] = {
        "ca.crt": ca.public_bytes(serialization.Encoding.PEM),
        "ca.key": _pem_key(ca_key),
    }
    leaves = {
        "apiserver": dict(cn="kube-apiserver", server=True, ips=("127.0.0.1", SERVICE_IP),
                          dns=("localhost", "kubernetes", "kubernetes.default",
                               "kubernetes.default.svc", "kubernetes.default.svc.cluster.local")),
        "admin": dict(cn="aiplat-admin", org="system:masters", server=False),
        "webhooks": dict(cn="aiplat-lab-webhooks", server=True, ips=("127.0.0.1",),
                         dns=("localhost",)),
    }
    for name, kw in leaves.items():
        crt, key = _leaf(ca_key, ca_name, **kw)  # type: ignore[arg-type]
        files[f"{name}.crt"], files[f"{name}.key"] = crt, key
    sa = _key()
    files["sa.key"] = _pem_key(sa)
    files["sa.pub"] = sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    for name, data in files.items():
        atomic_write(folder / name, data, 0o600 if name.endswith(".key") else 0o644)
    # controller-runtime webhook servers read tls.crt / tls.key from one folder.
    for app in ("kueue", "jobset"):
        d = folder / f"{app}-webhook"
        d.mkdir(exist_ok=True, mode=0o700)
        atomic_write(d / "tls.crt", files["webhooks.crt"])
        atomic_write(d / "tls.key", files["webhooks.key"], 0o600)
    return Pki(folder)
