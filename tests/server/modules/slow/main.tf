# A module whose apply takes a while and leaves a mark each time it runs: the tests stop,
# cancel and restart things during its apply, and count how often it ran.
variable "seconds" {
  type    = string
  default = "3"
}

variable "marker" {
  type        = string
  description = "A file that gets one line per apply."
}

resource "terraform_data" "slow" {
  input = var.seconds

  provisioner "local-exec" {
    command = "echo applied >> '${var.marker}'; sleep ${var.seconds}"
  }
}

output "slept" {
  value = terraform_data.slow.output
}

output "secret" {
  value     = "s3cr3t-${var.seconds}"
  sensitive = true
}
