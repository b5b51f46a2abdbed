# A Cairn cluster managed with the magodo restful provider.
#
# restful_resource POSTs `body` to `path`, takes its id from `read_path` (the answer's `id`
# filled in), then reads, PUTs and DELETEs there. The create, update and delete requests carry
# `?wait=300`, the query form of `Prefer: wait=300`: Cairn answers once the operation the request
# started has ended, so `terraform apply` returns when the cluster is available and `terraform
# destroy` when it is gone. Reads carry no `wait`: GET takes no such parameter.
#
#   terraform init
#   terraform apply -var cairn_url=http://127.0.0.1:8080 -var cairn_token=cairn_...

terraform {
  required_providers {
    restful = {
      source  = "magodo/restful"
      version = "~> 0.20" # create_query, update_query, delete_query; security.http.token
    }
  }
}

variable "cairn_url" {
  description = "cairnd's API address."
  type        = string
  default     = "http://127.0.0.1:8080"
}

variable "cairn_token" {
  description = "An API token of scope admin (cairnd token create --name terraform --scope admin)."
  type        = string
  sensitive   = true
}

# Change both (to a target GET /v1/engine-versions lists for redis 7.0, such as valkey 8.0) to
# upgrade the engine in place: the PUT answers once every node runs the new one.
variable "engine" {
  type    = string
  default = "redis"
}

variable "engine_version" {
  type    = string
  default = "7.0"
}

variable "wait_seconds" {
  description = "How long a write waits for its operation; cairnd cuts it to its --max-wait."
  type        = number
  default     = 300
}

provider "restful" {
  base_url = var.cairn_url
  security = {
    http = {
      token = {
        token = var.cairn_token
      }
    }
  }
  create_method = "POST"
  update_method = "PUT"
  delete_method = "DELETE"
}

resource "restful_resource" "sessions" {
  path      = "/v1/clusters"
  read_path = "$(path)/$(body.id)"

  # The spec, as Cairn stores it and GET returns it: each field comes back exactly as sent, or
  # as its default when left out, so the next plan shows no change. Fields that can never
  # change (id, cluster_mode) get 400 if edited, hence force_new_attrs.
  body = {
    id                 = "sessions"
    description        = "session store"
    engine             = var.engine
    engine_version     = var.engine_version
    node_type          = "cache.t3.micro"
    cluster_mode       = "disabled"
    replicas_per_shard = 2
    automatic_failover = true
    multi_az           = true
    parameters = {
      "maxmemory-policy" = "volatile-lru"
    }
    tags = {
      team = "identity"
    }
  }
  force_new_attrs = ["id", "cluster_mode"]

  create_query = {
    wait = [var.wait_seconds]
  }
  update_query = {
    wait = [var.wait_seconds]
  }
  delete_query = {
    wait = [var.wait_seconds]
  }
}

output "cluster_status" {
  value = restful_resource.sessions.output.status
}

output "primary_endpoint" {
  description = "Sentinel-aware clients find the primary through cairnd's discovery port instead."
  value       = restful_resource.sessions.output.endpoints.primary
}
